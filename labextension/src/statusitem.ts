/**
 * The status bar's "N running" item: how many jobs are running or on their way; a
 * click (or Enter) opens the jobs panel. The status bar hides it while nothing runs.
 */
import { Widget } from '@lumino/widgets';

import { JobsModel } from './model';
import { english, ITrans } from './pure/i18n';
import { activeCount } from './pure/jobs';

export class RunningItem extends Widget {
  constructor(
    private readonly _model: JobsModel,
    private readonly _open: () => void,
    private readonly _trans: ITrans = english
  ) {
    super({ node: document.createElement('button') });
    this.addClass('jp-DDL-running-item');
    this.node.onclick = () => this._open();
    this._model.changed.connect(this._render, this);
    this._render();
  }

  private _render(): void {
    const n = activeCount(this._model.jobs);
    this.node.textContent = this._trans.__('%1 running', n);
    this.node.title =
      n === 1
        ? this._trans.__('1 training job running or starting: open the jobs panel')
        : this._trans.__('%1 training jobs running or starting: open the jobs panel', n);
    this.node.dataset.count = String(n);
  }
}
