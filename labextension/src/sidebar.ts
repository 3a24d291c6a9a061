/**
 * The sidebar: every job the server reports, one row each: state, the full name
 * (wrapped at its hyphens, never cut), the notebook and cell it came from, ready
 * replicas (or the end state) and elapsed time. Clicking a row opens the job view.
 * One line per backend the server could not ask (a cluster that is down hides no local
 * job). The toolbar holds stock JupyterLab buttons.
 */
import { refreshIcon, SidePanel, ToolbarButton } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import { Panel, Widget } from '@lumino/widgets';

import { el } from './dom';
import { basename, formatElapsed, stateIcon } from './pure/format';
import { JobsModel } from './model';
import { CommandIDs, IJobSummary } from './tokens';

const COLUMNS = ['Job', 'Notebook', 'Status'];

export class JobsPanel extends SidePanel {
  constructor(
    private readonly _model: JobsModel,
    private readonly _commands: CommandRegistry
  ) {
    super({ content: new Panel() }); // one body: no accordion section around it
    this.addClass('jp-DDL-panel');
    this.id = 'jupyter-ddl-jobs';
    this.title.caption = 'Distributed training jobs';
    const heading = new Widget({ node: el('h2', 'jp-DDL-panel-title', 'Training jobs') });
    this.header.addWidget(heading);
    this.toolbar.addItem(
      'refresh',
      new ToolbarButton({
        icon: refreshIcon,
        className: 'jp-DDL-refresh',
        tooltip: 'Refresh the job list',
        onClick: () => void this._model.refresh()
      })
    );
    const body = new Widget();
    body.addClass('jp-DDL-panel-body');
    this._status.className = 'jp-DDL-panel-status';
    this._table.className = 'jp-DDL-jobtable';
    const head = el('tr');
    COLUMNS.forEach(c => head.appendChild(el('th', '', c)));
    this._table.append(el('thead'), this._rows);
    this._table.tHead!.appendChild(head);
    this._unavailable.className = 'jp-DDL-unavailable';
    body.node.append(this._status, this._unavailable, this._table);
    this.addWidget(body);
    this._model.changed.connect(this._render, this);
    this._render();
  }

  dispose(): void {
    clearInterval(this._ticker);
    super.dispose();
  }

  protected onAfterShow(): void {
    void this._model.refresh();
  }

  private _render(): void {
    const jobs = this._model.jobs;
    this.node.dataset.live = String(this._model.live);
    this._status.textContent =
      this._model.error ?? (jobs.length ? '' : 'No jobs yet: run a %%distribute cell.');
    this._status.classList.toggle('jp-DDL-error', !!this._model.error);
    this._table.hidden = !jobs.length;
    this._rows.replaceChildren(...jobs.map(job => this._row(job)));
    this._unavailable.replaceChildren(
      ...this._model.unavailable.map(u => {
        const line = el('li', 'jp-DDL-unavailable-line', u.message);
        line.dataset.backend = u.backend;
        return line;
      })
    );
    // running jobs' time counts on between pushes
    clearInterval(this._ticker);
    if (jobs.some(j => !j.finished && j.started)) {
      this._ticker = setInterval(() => this._tick(), 1000);
    }
  }

  private _tick(): void {
    if (!this.isVisible) {
      return;
    }
    for (const job of this._model.jobs) {
      const key = CSS.escape(`${job.backend}/${job.name}`);
      const cell = this._rows.querySelector(`tr[data-key="${key}"] .jp-DDL-elapsed`);
      if (cell) {
        cell.textContent = formatElapsed(this._model.elapsed(job));
      }
    }
  }

  private _row(job: IJobSummary): HTMLElement {
    const row = el('tr', `jp-DDL-jobrow jp-DDL-state-${job.state.toLowerCase()}`);
    row.dataset.job = job.name;
    row.dataset.key = `${job.backend}/${job.name}`;
    row.dataset.state = job.state;
    row.title = [`${job.name} (${job.backend}): ${job.state}`, job.message ?? ''].filter(Boolean).join('\n');

    const name = el('td', 'jp-DDL-jobcell');
    const title = el('div', 'jp-DDL-jobtitle');
    title.append(
      el('span', 'jp-DDL-state-icon', stateIcon(job.state)),
      el('span', 'jp-DDL-jobname', job.name)
    );
    name.append(title, el('div', 'jp-DDL-jobmeta', `${job.strategy} · ${job.backend}`));

    const source = el('td', 'jp-DDL-jobsource');
    if (job.notebook) {
      const nb = el('div', 'jp-DDL-notebook', basename(job.notebook));
      nb.title = job.notebook;
      source.appendChild(nb);
    }
    if (job.cell_id) {
      source.appendChild(el('div', 'jp-DDL-cell', `cell ${job.cell_id}`));
    }

    const status = el('td', 'jp-DDL-status');
    const ready = job.finished ? job.state : `${job.ready}/${job.total} ready`;
    const replicas = el('div', 'jp-DDL-replicas-cell', ready);
    replicas.dataset.ready = String(job.ready);
    status.append(replicas, el('div', 'jp-DDL-elapsed', formatElapsed(this._model.elapsed(job))));
    row.append(name, source, status);
    row.onclick = () => void this._commands.execute(CommandIDs.openJob, { name: job.name });
    return row;
  }

  private _status = el('div');
  private _unavailable = el('ul');
  private _table = el('table');
  private _rows = el('tbody');
  private _ticker: ReturnType<typeof setInterval> | undefined = undefined;
}
