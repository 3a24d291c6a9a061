/**
 * The sidebar: every job the server reports, one row each (state icon, name,
 * strategy, replicas ready/total, elapsed time), and one line per backend the server
 * could not ask (a cluster that is down hides no local job). Clicking a row opens the
 * job view.
 */
import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';

import { el, formatElapsed, stateIcon } from './format';
import { JobsModel } from './model';
import { CommandIDs, IJobSummary } from './tokens';

export class JobsPanel extends Widget {
  constructor(
    private readonly _model: JobsModel,
    private readonly _commands: CommandRegistry
  ) {
    super();
    this.addClass('jp-DDL-panel');
    this.id = 'jupyter-ddl-jobs';
    this.title.caption = 'Distributed training jobs';
    const header = el('div', 'jp-DDL-panel-header');
    header.appendChild(el('span', 'jp-DDL-panel-title', 'Training jobs'));
    const refresh = el('button', 'jp-DDL-button jp-DDL-refresh', 'Refresh');
    refresh.title = 'Refresh the job list';
    refresh.onclick = () => void this._model.refresh();
    header.appendChild(refresh);
    this.node.appendChild(header);
    this.node.appendChild(this._status);
    this._status.className = 'jp-DDL-panel-status';
    this._unavailable.className = 'jp-DDL-unavailable';
    this.node.appendChild(this._unavailable);
    this._list.className = 'jp-DDL-joblist';
    this.node.appendChild(this._list);
    this._model.changed.connect(this._render, this);
    this._render();
  }

  protected onAfterShow(): void {
    void this._model.refresh();
  }

  private _render(): void {
    const jobs = this._model.jobs;
    this._status.textContent =
      this._model.error ?? (jobs.length ? '' : 'No jobs yet: run a %%distribute cell.');
    this._status.classList.toggle('jp-DDL-error', !!this._model.error);
    this._list.replaceChildren(...jobs.map(job => this._row(job)));
    this._unavailable.replaceChildren(
      ...this._model.unavailable.map(u => {
        const line = el('li', 'jp-DDL-unavailable-line', u.message);
        line.dataset.backend = u.backend;
        return line;
      })
    );
  }

  private _row(job: IJobSummary): HTMLElement {
    const row = el('li', `jp-DDL-jobrow jp-DDL-state-${job.state.toLowerCase()}`);
    row.dataset.job = job.name;
    row.dataset.state = job.state;
    row.title = job.message ?? `${job.name} (${job.backend})`;
    row.appendChild(el('span', 'jp-DDL-state-icon', stateIcon(job.state)));
    const main = el('div', 'jp-DDL-jobrow-main');
    main.appendChild(el('div', 'jp-DDL-jobname', job.name));
    const meta = `${job.strategy} · ${job.ready}/${job.total} ready · ${formatElapsed(job.elapsed)}`;
    main.appendChild(el('div', 'jp-DDL-jobmeta', meta));
    row.appendChild(main);
    row.appendChild(el('span', 'jp-DDL-jobstate', job.state));
    row.onclick = () =>
      void this._commands.execute(CommandIDs.openJob, { name: job.name });
    return row;
  }

  private _status = el('div');
  private _unavailable = el('ul');
  private _list = el('ul');
}
