/**
 * The job's logs: an "all replicas" tab beside one tab per replica, followed live
 * over ONE server-sent-events stream of every replica (browsers allow six
 * connections per server: a stream per replica would run out of them).
 *
 * Each pane keeps at most MAX_LINES lines (the full log stays on the server). When
 * the stream drops before the job ended it reconnects from the lowest offset any
 * replica still needs, and lines already shown are skipped.
 */
import { Panel, Widget } from '@lumino/widgets';

import { el } from './dom';
import { followLogs } from './request';
import { ILogLine } from './tokens';

const MAX_LINES = 5000;
const RETRY_MS = [1000, 2000, 5000, 10000];
/** The tab (and data-replica) of the merged view. */
export const ALL = 'all';

/** One pane of lines. */
class LogPane extends Widget {
  constructor(readonly replica: string) {
    super();
    this.addClass('jp-DDL-log');
    this.node.dataset.replica = replica;
    this.node.dataset.lines = '0';
    this.node.appendChild(this._pre);
  }

  append(lines: ILogLine[], prefixed: boolean): void {
    if (!lines.length) {
      return;
    }
    const atBottom = this.node.scrollTop + this.node.clientHeight >= this.node.scrollHeight - 4;
    const chunk = document.createDocumentFragment();
    for (const line of lines) {
      const row = el('div', line.stream === 'stderr' ? 'jp-DDL-log-line jp-DDL-stderr' : 'jp-DDL-log-line');
      if (prefixed) {
        row.appendChild(el('span', 'jp-DDL-log-replica', line.replica));
      }
      row.appendChild(document.createTextNode(line.text));
      chunk.appendChild(row);
    }
    this._pre.appendChild(chunk);
    this._count += lines.length;
    while (this._count > MAX_LINES && this._pre.firstChild) {
      this._pre.removeChild(this._pre.firstChild);
      this._count--;
    }
    this.node.dataset.lines = String(this._count);
    if (atBottom) {
      this.node.scrollTop = this.node.scrollHeight;
    }
  }

  private _pre = el('div', 'jp-DDL-log-text');
  private _count = 0;
}

export class JobLogs extends Panel {
  constructor(readonly job: string) {
    super();
    this.addClass('jp-DDL-logs');
    const tabs = new Widget({ node: this._tabs });
    tabs.addClass('jp-DDL-logtabs');
    this.addWidget(tabs);
    this.addWidget(this._panes);
    this._footer.className = 'jp-DDL-log-footer';
    this.addWidget(new Widget({ node: this._footer }));
    this.setReplicas([]);
  }

  /** The job's replicas (from its detail); the follower starts with the first call. */
  setReplicas(ids: string[]): void {
    const known = this._pane.size;
    [ALL, ...ids].forEach(id => this._ensure(id));
    if (this._pane.size !== known) {
      this._retab();
    }
    if (ids.length && !this._started) {
      this._started = true;
      void this._follow();
    }
  }

  /** Show one pane: `all` or a replica id. */
  showReplica(replica: string): void {
    this._current = this._pane.has(replica) ? replica : ALL;
    this._pane.forEach((pane, id) => pane.setHidden(id !== this._current));
    this._tabs.querySelectorAll('button').forEach(b => {
      b.classList.toggle('jp-mod-current', b.dataset.replica === this._current);
      b.setAttribute('aria-selected', String(b.dataset.replica === this._current));
    });
  }

  dispose(): void {
    this._abort.abort();
    super.dispose();
  }

  private _ensure(id: string): LogPane {
    let pane = this._pane.get(id);
    if (!pane) {
      pane = new LogPane(id);
      this._pane.set(id, pane);
      this._panes.addWidget(pane);
    }
    return pane;
  }

  private _retab(): void {
    this._tabs.replaceChildren(...[...this._pane.keys()].map(id => this._tab(id)));
    this.showReplica(this._current);
  }

  private _tab(id: string): HTMLButtonElement {
    const tab = el('button', 'jp-DDL-logtab', id === ALL ? 'all replicas' : id);
    tab.dataset.replica = id;
    tab.setAttribute('role', 'tab');
    tab.onclick = () => this.showReplica(id);
    return tab;
  }

  private async _follow(): Promise<void> {
    let attempt = 0;
    while (!this._ended && !this._abort.signal.aborted) {
      this._footer.textContent = 'following…';
      const before = this._received;
      await followLogs(
        this.job,
        null,
        this._resumeOffset(),
        {
          onLines: lines => this._receive(lines),
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
      attempt = this._received > before ? 0 : attempt + 1;
      await new Promise(resolve => setTimeout(resolve, RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]));
    }
  }

  /** Where to start again: the lowest offset a replica still needs (known ones only). */
  private _resumeOffset(): number {
    const ids = [...this._pane.keys()].filter(id => id !== ALL);
    return ids.length ? Math.min(...ids.map(id => this._next.get(id) ?? 0)) : 0;
  }

  private _receive(lines: ILogLine[]): void {
    const fresh: ILogLine[] = [];
    for (const line of lines) {
      if (line.offset < (this._next.get(line.replica) ?? 0)) {
        continue; // seen before a reconnect
      }
      this._next.set(line.replica, line.offset + 1);
      this._received++;
      fresh.push(line);
    }
    this._pane.get(ALL)?.append(fresh, true);
    const byReplica = new Map<string, ILogLine[]>();
    for (const line of fresh) {
      const mine = byReplica.get(line.replica) ?? [];
      mine.push(line);
      byReplica.set(line.replica, mine);
    }
    const known = this._pane.size;
    byReplica.forEach((mine, id) => this._ensure(id).append(mine, false));
    if (this._pane.size !== known) {
      this._retab(); // a replica the detail did not name yet
    }
  }

  private _tabs = el('div');
  private _panes = new Panel();
  private _footer = el('div');
  private _pane = new Map<string, LogPane>();
  private _next = new Map<string, number>();
  private _current = ALL;
  private _received = 0;
  private _started = false;
  private _ended = false;
  private _abort = new AbortController();
}
