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
import { english, ITrans, stateWord } from './pure/i18n';
import { inTimeOrder, internalNote } from './pure/logs';
import { followLogs } from './request';
import { ILogLine } from './tokens';

const MAX_LINES = 5000;
const RETRY_MS = [1000, 2000, 5000, 10000];
/** The tab (and data-replica) of the merged view. */
export const ALL = 'all';

let uid = 0;

/**
 * One pane of lines: a tabpanel that follows the end of its log while the reader is
 * there; scrolling up stops following (a "Jump to latest" button brings it back).
 * A hidden pane cannot scroll, so the follow state is kept and applied when shown.
 */
class LogPane extends Widget {
  constructor(
    readonly replica: string,
    trans: ITrans = english
  ) {
    super();
    this.addClass('jp-DDL-log');
    this.id = `jp-DDL-log-${++uid}`;
    this.node.dataset.replica = replica;
    this.node.dataset.lines = '0';
    this.node.dataset.following = 'true';
    this.node.setAttribute('role', 'tabpanel');
    this.node.tabIndex = 0; // a scrolling region is read by keyboard too
    this.node.appendChild(this._pre);
    this._jump.className = 'jp-DDL-jump jp-mod-styled';
    this._jump.textContent = trans.__('Jump to latest ↓');
    this._jump.hidden = true;
    this._jump.onclick = () => {
      this._setFollowing(true);
      this.node.focus();
    };
    this.node.appendChild(this._jump);
    this.node.addEventListener('scroll', () => {
      if (this.isVisible && !this._scrolling) {
        this._setFollowing(this._atBottom());
      }
      this._scrolling = false;
    });
  }

  get following(): boolean {
    return this._following;
  }

  append(lines: ILogLine[], prefixed: boolean): void {
    if (!lines.length) {
      return;
    }
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
    this._toEnd();
  }

  protected onAfterShow(): void {
    this._toEnd();
  }

  private _atBottom(): boolean {
    return this.node.scrollTop + this.node.clientHeight >= this.node.scrollHeight - 4;
  }

  private _setFollowing(on: boolean): void {
    this._following = on;
    this.node.dataset.following = String(on);
    this._jump.hidden = on;
    this._toEnd();
  }

  private _toEnd(): void {
    if (this._following && this.isVisible && !this._atBottom()) {
      // only a scroll that will happen is marked as ours: a mark left when nothing moved
      // would swallow the user's next scroll, and following would never stop
      this._scrolling = true;
      this.node.scrollTop = this.node.scrollHeight;
    }
  }

  private _pre = el('div', 'jp-DDL-log-text');
  private _jump = el('button');
  private _count = 0;
  private _following = true;
  private _scrolling = false;
}

export class JobLogs extends Panel {
  constructor(
    readonly job: string,
    private readonly _trans: ITrans = english
  ) {
    super();
    this.addClass('jp-DDL-logs');
    const tabs = new Widget({ node: this._tabs });
    tabs.addClass('jp-DDL-logtabs');
    this._tabs.setAttribute('role', 'tablist');
    this._tabs.setAttribute('aria-label', _trans.__('Logs'));
    this._tabs.addEventListener('keydown', this._onKey);
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
      const on = b.dataset.replica === this._current;
      b.classList.toggle('jp-mod-current', on);
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1; // one tab stop; arrows move between tabs
    });
  }

  dispose(): void {
    this._abort.abort();
    super.dispose();
  }

  private _ensure(id: string): LogPane {
    let pane = this._pane.get(id);
    if (!pane) {
      pane = new LogPane(id, this._trans);
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
    const tab = el('button', 'jp-DDL-logtab', id === ALL ? this._trans.__('all replicas') : id);
    tab.dataset.replica = id;
    tab.setAttribute('role', 'tab');
    const pane = this._pane.get(id)!;
    tab.id = `${pane.id}-tab`;
    tab.setAttribute('aria-controls', pane.id);
    pane.node.setAttribute('aria-labelledby', tab.id);
    tab.onclick = () => this.showReplica(id);
    return tab;
  }

  /** Arrow keys, Home and End move along the tabs and show the one reached. */
  private _onKey = (event: KeyboardEvent): void => {
    const tabs = [...this._tabs.querySelectorAll<HTMLButtonElement>('button[role="tab"]')];
    const at = tabs.findIndex(t => t.dataset.replica === this._current);
    const moves: Record<string, number> = {
      ArrowRight: at + 1,
      ArrowDown: at + 1,
      ArrowLeft: at - 1,
      ArrowUp: at - 1,
      Home: 0,
      End: tabs.length - 1
    };
    if (!(event.key in moves) || !tabs.length) {
      return;
    }
    event.preventDefault();
    const target = tabs[(moves[event.key] + tabs.length) % tabs.length];
    this.showReplica(target.dataset.replica!);
    target.focus();
  };

  private async _follow(): Promise<void> {
    let attempt = 0;
    while (!this._ended && !this._abort.signal.aborted) {
      this._footer.textContent = this._trans.__('following…');
      const before = this._received;
      await followLogs(
        this.job,
        null,
        this._resumeOffset(),
        {
          onLines: lines => this._receive(lines),
          onEnd: final => {
            this._ended = true;
            this._footer.textContent = final
              ? this._trans.__('job %1', stateWord(this._trans, final.state).toLowerCase())
              : this._trans.__('ended');
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
      if (!internalNote(line)) {
        fresh.push(line);
      }
    }
    this._pane.get(ALL)?.append(inTimeOrder(fresh), true);
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
