/**
 * One replica's log, followed live over server-sent events.
 *
 * Keeps at most MAX_LINES lines in the page (the full log stays on the server);
 * reconnects from the last offset if the stream drops before the job ended.
 */
import { Widget } from '@lumino/widgets';

import { el } from './format';
import { followLogs } from './request';
import { ILogLine } from './tokens';

const MAX_LINES = 5000;
const RETRY_MS = [1000, 2000, 5000, 10000];

export class LogView extends Widget {
  constructor(
    readonly job: string,
    readonly replica: string
  ) {
    super();
    this.addClass('jp-DDL-log');
    this.node.dataset.replica = replica;
    this.node.appendChild(this._pre);
    this.node.appendChild(this._footer);
    this._footer.className = 'jp-DDL-log-footer';
    void this._follow();
  }

  /** Number of lines received so far (the next offset to ask for). */
  get offset(): number {
    return this._offset;
  }

  dispose(): void {
    this._abort.abort();
    super.dispose();
  }

  private async _follow(): Promise<void> {
    let attempt = 0;
    while (!this._ended && !this._abort.signal.aborted) {
      this._footer.textContent = 'following…';
      const before = this._offset;
      await followLogs(
        this.job,
        this.replica,
        this._offset,
        {
          onLines: lines => this._append(lines),
          onEnd: final => {
            this._ended = true;
            this._footer.textContent = final ? `job ${final.state.toLowerCase()}` : 'ended';
          },
          onError: message => {
            this._footer.textContent = message;
          }
        },
        this._abort.signal
      );
      if (this._ended || this._abort.signal.aborted) {
        return;
      }
      attempt = this._offset > before ? 0 : attempt + 1;
      const wait = RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)];
      await new Promise(resolve => setTimeout(resolve, wait));
    }
  }

  private _append(lines: ILogLine[]): void {
    if (!lines.length) {
      return;
    }
    const atBottom = this.node.scrollTop + this.node.clientHeight >= this.node.scrollHeight - 4;
    const text = lines.map(l => l.text).join('\n') + '\n';
    this._pre.appendChild(document.createTextNode(text));
    this._count += lines.length;
    this._offset = lines[lines.length - 1].offset + 1;
    this.node.dataset.lines = String(this._count);
    while (this._count > MAX_LINES && this._pre.firstChild) {
      const first = this._pre.firstChild;
      this._count -= (first.textContent ?? '').split('\n').length - 1;
      this._pre.removeChild(first);
    }
    if (atBottom) {
      this.node.scrollTop = this.node.scrollHeight;
    }
  }

  private _pre = el('pre', 'jp-DDL-log-text');
  private _footer = el('div');
  private _offset = 0;
  private _count = 0;
  private _ended = false;
  private _abort = new AbortController();
}
