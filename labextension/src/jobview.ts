/**
 * The job view in the main area: a toolbar (Cancel, Refresh), the header with state,
 * notebook and cell, the replica table, the metrics charts, and the logs ("all
 * replicas" and one tab per replica, followed live).
 */
import { refreshIcon, stopIcon, Toolbar, ToolbarButton } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import { Panel, Widget } from '@lumino/widgets';

import { MetricsChart } from './chart';
import { el, message } from './dom';
import { basename, formatResources, replicaLabel, stateIcon } from './pure/format';
import { startedAndElapsed } from './pure/jobs';
import { runAction } from './jobactions';
import { JobModel } from './jobmodel';
import { JobLogs } from './logview';
import { english, ITrans, stateWord } from './pure/i18n';
import { buildCharts } from './pure/series';
import { CommandIDs, IJobDetail, IReplica, IRootCause } from './tokens';

export class JobView extends Panel {
  /** `commands` runs the header's notebook link (absent: the notebook is plain text). */
  constructor(
    readonly model: JobModel,
    private readonly _commands: CommandRegistry | null = null,
    private readonly _trans: ITrans = english
  ) {
    super();
    const trans = _trans;
    this._cancel = new ToolbarButton({
      icon: stopIcon,
      label: trans.__('Cancel'),
      className: 'jp-DDL-cancel',
      tooltip: trans.__('Cancel the job: stop every replica'),
      onClick: () => void this._onCancel()
    });
    this._chart = new MetricsChart(trans);
    this.addClass('jp-DDL-jobview');
    this.node.dataset.job = model.name;
    this.id = `jupyter-ddl-jobview-${model.name}`;
    this.title.label = model.name;
    this.title.caption = trans.__('Training job %1', model.name);
    this.title.closable = true;

    this.toolbar.addItem('cancel', this._cancel);
    this.toolbar.addItem(
      'refresh',
      new ToolbarButton({
        icon: refreshIcon,
        className: 'jp-DDL-refresh',
        tooltip: trans.__('Refresh this job'),
        onClick: () => void this.model.refresh()
      })
    );
    const header = new Widget({ node: this._header });
    header.addClass('jp-DDL-jobview-header');
    this.addWidget(header);
    this.addWidget(new Widget({ node: this._table }));
    this.addWidget(new Widget({ node: el('h3', 'jp-DDL-section', trans.__('Metrics')) }));
    this.addWidget(this._chart);
    this.addWidget(new Widget({ node: el('h3', 'jp-DDL-section', trans.__('Logs')) }));
    this._logs = new JobLogs(model.name, trans);
    this.addWidget(this._logs);
    model.changed.connect(this._render, this);
    this._render();
  }

  /** Put it above the view (MainAreaWidget's `toolbar` option). */
  readonly toolbar = new Toolbar();

  dispose(): void {
    this.model.dispose();
    super.dispose();
  }

  private async _onCancel(): Promise<void> {
    const job = this.model.detail;
    if (!job) {
      return;
    }
    this._cancel.enabled = false;
    await runAction('cancel', job, () => void this.model.refresh(), this._trans);
    this._render();
  }

  private _render(): void {
    const job = this.model.detail;
    if (!job) {
      this._cancel.enabled = false; // a job not (or no longer) known cannot be cancelled from here
      this._header.replaceChildren(message('div', 'jp-DDL-muted', this.model.error ?? this._trans.__('Loading…')));
      return;
    }
    this._renderHeader(job);
    this._renderTable(job.replicas);
    const ids = job.replicas.map(r => r.id);
    this._chart.setCharts(buildCharts(this.model.points, ids));
    this._logs.setReplicas(ids);
    const root = job.root_cause?.replica;
    if (root && root !== this._shownRoot) {
      this._shownRoot = root; // once: the user may pick another tab afterwards
      this._logs.showReplica(root);
    }
  }

  private _renderHeader(job: IJobDetail): void {
    const trans = this._trans;
    const title = el('div', 'jp-DDL-jobview-title');
    title.appendChild(el('span', 'jp-DDL-state-icon', stateIcon(job.state)));
    title.appendChild(el('span', 'jp-DDL-jobname', job.name));
    const badge = el('span', `jp-DDL-badge jp-DDL-state-${job.state.toLowerCase()}`, stateWord(trans, job.state));
    badge.dataset.state = job.state;
    title.appendChild(badge);
    this._cancel.enabled = !job.finished && job.actions.cancel && !this.model.gone;
    const image = job.spec?.image ? ` · ${job.spec.image}` : '';
    const ready = job.finished ? '' : ' · ' + trans.__('%1/%2 ready', job.ready, job.total);
    const meta = el(
      'div',
      'jp-DDL-jobmeta',
      `${job.strategy} · ${job.backend}${image}${ready} · ${startedAndElapsed(job, undefined, trans)}`
    );
    const parts: HTMLElement[] = [title, meta];
    if (job.backoff_limit !== undefined && job.backoff_limit !== null) {
      const used = trans.__(
        'restarts %1 of %2 (backoff limit, every replica together)',
        job.restarts ?? 0,
        job.backoff_limit
      );
      parts.push(el('div', 'jp-DDL-backoff', used));
    }
    if (job.notebook || job.cell_id) {
      const source = el('div', 'jp-DDL-jobsource', trans.__('from') + ' ');
      if (job.notebook && this._commands) {
        const commands = this._commands;
        const link = el('button', 'jp-DDL-link jp-DDL-open-notebook', basename(job.notebook));
        link.title = job.cell_id
          ? trans.__('Open %1 at the cell this job came from', job.notebook)
          : trans.__('Open %1', job.notebook);
        link.setAttribute('aria-label', trans.__('Open notebook %1 of job %2', basename(job.notebook), job.name));
        link.onclick = () => void commands.execute(CommandIDs.openNotebook, { name: job.name, backend: job.backend });
        source.appendChild(link);
      } else if (job.notebook) {
        source.append(basename(job.notebook));
        source.title = job.notebook;
      }
      if (job.cell_id) {
        source.append((job.notebook ? ' · ' : '') + trans.__('cell %1', job.cell_id));
      }
      parts.push(source);
    }
    if (job.root_cause) {
      parts.push(this._rootCause(job.root_cause, job.replicas));
    } else if (job.message) {
      parts.push(message('div', 'jp-DDL-message', job.message));
    }
    if (this.model.error) {
      parts.push(message('div', 'jp-DDL-error', this.model.error));
    }
    this._header.replaceChildren(...parts);
  }

  /** The replica that failed first, the end of its own traceback, then its consequences. */
  private _rootCause(cause: IRootCause, replicas: IReplica[]): HTMLElement {
    const trans = this._trans;
    const box = el('div', 'jp-DDL-rootcause');
    box.dataset.replica = cause.replica;
    const head = el('div', 'jp-DDL-rootcause-head');
    head.appendChild(el('b', '', trans.__('Root cause:') + ' '));
    head.appendChild(
      el('span', '', trans.__('%1 failed first — %2', replicaLabel(cause.replica, cause.rank), cause.summary))
    );
    head.onclick = () => this._logs.showReplica(cause.replica);
    box.appendChild(head);
    if (cause.tail.length) {
      box.appendChild(el('pre', 'jp-DDL-rootcause-tail', cause.tail.join('\n')));
    }
    for (const c of cause.consequences) {
      const known = replicas.find(r => r.id === c.replica);
      const line = trans.__('then %1: %2 (a consequence)', replicaLabel(c.replica, c.rank ?? known?.rank), c.symptom);
      box.appendChild(el('div', 'jp-DDL-consequence', line));
    }
    return box;
  }

  private _renderTable(replicas: IReplica[]): void {
    const head = el('tr');
    const trans = this._trans;
    const headings = [
      trans.__('replica'),
      trans.__('state'),
      trans.__('restarts'),
      trans.__('exit code'),
      trans.__('resources'),
      trans.__('message')
    ];
    for (const h of headings) {
      head.appendChild(el('th', '', h));
    }
    const rows = replicas.map(r => {
      const tr = el('tr');
      tr.dataset.replica = r.id;
      const cells = [
        replicaLabel(r.id, r.rank),
        stateWord(trans, r.state),
        String(r.restarts),
        r.exit_code ?? '',
        formatResources(r.resources),
        r.message ?? ''
      ];
      for (const cell of cells) {
        tr.appendChild(message('td', '', String(cell)));
      }
      tr.onclick = () => this._logs.showReplica(r.id);
      return tr;
    });
    this._table.className = 'jp-DDL-replicas';
    this._table.replaceChildren(head, ...rows);
  }

  private _header = el('div');
  private _table = el('table');
  private _shownRoot: string | null = null;
  private _cancel: ToolbarButton;
  private _chart: MetricsChart;
  private _logs: JobLogs;
}
