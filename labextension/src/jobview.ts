/**
 * The job view in the main area: header with state and Cancel, the replica table,
 * the metrics chart, and one log tab per replica that follows live.
 */
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { Panel, Widget } from '@lumino/widgets';

import { MetricsChart } from './chart';
import { el, formatElapsed, stateIcon } from './format';
import { LogView } from './logview';
import { JobModel } from './model';
import { IJobDetail, IReplica } from './tokens';

export class JobView extends Panel {
  constructor(readonly model: JobModel) {
    super();
    this.addClass('jp-DDL-jobview');
    this.node.dataset.job = model.name;
    this.id = `jupyter-ddl-jobview-${model.name}`;
    this.title.label = model.name;
    this.title.caption = `Training job ${model.name}`;
    this.title.closable = true;

    this._cancel.onclick = () => void this._onCancel();
    const header = new Widget({ node: this._header });
    header.addClass('jp-DDL-jobview-header');
    this.addWidget(header);
    this.addWidget(new Widget({ node: this._table }));
    this.addWidget(this._chart);
    const logs = new Widget({ node: this._tabs });
    logs.addClass('jp-DDL-logtabs');
    this.addWidget(logs);
    this.addWidget(this._logs);
    this._logs.addClass('jp-DDL-logs');
    model.changed.connect(this._render, this);
    this._render();
  }

  dispose(): void {
    this.model.dispose();
    super.dispose();
  }

  private async _onCancel(): Promise<void> {
    const answer = await showDialog({
      title: `Cancel ${this.model.name}?`,
      body: 'Every replica is stopped; logs received so far stay available.',
      buttons: [Dialog.cancelButton({ label: 'Keep running' }), Dialog.warnButton({ label: 'Cancel job' })]
    });
    if (!answer.button.accept) {
      return;
    }
    this._cancel.disabled = true;
    try {
      await this.model.cancel();
    } catch (error) {
      this._cancel.disabled = false;
      await showErrorMessage('Cancel failed', (error as Error).message);
    }
  }

  private _render(): void {
    const job = this.model.detail;
    if (!job) {
      this._header.replaceChildren(el('div', 'jp-DDL-muted', this.model.error ?? 'Loading…'));
      return;
    }
    this._renderHeader(job);
    this._renderTable(job.replicas);
    this._chart.setPoints(this.model.points);
    this._renderTabs(job.replicas);
  }

  private _renderHeader(job: IJobDetail): void {
    const title = el('div', 'jp-DDL-jobview-title');
    title.appendChild(el('span', 'jp-DDL-state-icon', stateIcon(job.state)));
    title.appendChild(el('span', 'jp-DDL-jobname', job.name));
    const badge = el('span', `jp-DDL-badge jp-DDL-state-${job.state.toLowerCase()}`, job.state);
    badge.dataset.state = job.state;
    title.appendChild(badge);
    this._cancel.disabled = job.finished || !job.actions.cancel;
    title.appendChild(this._cancel);
    const image = job.spec?.image ? ` · ${job.spec.image}` : '';
    const meta = el(
      'div',
      'jp-DDL-jobmeta',
      `${job.strategy} · ${job.backend}${image} · ${job.ready}/${job.total} ready · ${formatElapsed(job.elapsed)}`
    );
    const parts: HTMLElement[] = [title, meta];
    if (job.message) {
      parts.push(el('div', 'jp-DDL-message', job.message));
    }
    if (this.model.error) {
      parts.push(el('div', 'jp-DDL-error', this.model.error));
    }
    this._header.replaceChildren(...parts);
  }

  private _renderTable(replicas: IReplica[]): void {
    const head = el('tr');
    for (const h of ['replica', 'state', 'restarts', 'exit code', 'message']) {
      head.appendChild(el('th', '', h));
    }
    const rows = replicas.map(r => {
      const tr = el('tr');
      tr.dataset.replica = r.id;
      for (const cell of [r.id, r.state, String(r.restarts), r.exit_code ?? '', r.message ?? '']) {
        tr.appendChild(el('td', '', String(cell)));
      }
      return tr;
    });
    this._table.className = 'jp-DDL-replicas';
    this._table.replaceChildren(head, ...rows);
  }

  private _renderTabs(replicas: IReplica[]): void {
    const ids = replicas.map(r => r.id);
    if (ids.join(',') === this._tabIds.join(',')) {
      return; // the replica set rarely changes: keep the followers running
    }
    this._tabIds = ids;
    this._tabs.replaceChildren(
      ...ids.map(id => {
        const tab = el('button', 'jp-DDL-logtab', id);
        tab.dataset.replica = id;
        tab.onclick = () => this._showLog(id);
        return tab;
      })
    );
    if (ids.length && !this._current) {
      this._showLog(ids[0]);
    }
  }

  /** Show one replica's log; its follower starts on first view and keeps running. */
  private _showLog(replica: string): void {
    let view = this._views.get(replica);
    if (!view) {
      view = new LogView(this.model.name, replica);
      this._views.set(replica, view);
      this._logs.addWidget(view);
    }
    this._views.forEach((v, id) => v.setHidden(id !== replica));
    this._tabs.querySelectorAll('button').forEach(b => {
      b.classList.toggle('jp-mod-current', b.dataset.replica === replica);
    });
    this._current = replica;
  }

  private _header = el('div');
  private _table = el('table');
  private _tabs = el('div');
  private _cancel = el('button', 'jp-DDL-button jp-DDL-cancel', 'Cancel');
  private _chart = new MetricsChart();
  private _logs = new Panel();
  private _views = new Map<string, LogView>();
  private _tabIds: string[] = [];
  private _current: string | null = null;
}
