/**
 * The job list: what the server reports, pushed as it changes, polled as a fallback.
 *
 * The server pushes the list's changes (GET /events, server-sent events) while the
 * page is visible; the stream is closed while the page is hidden and reopened when it
 * shows again. The poll (GET /jobs) backs off exponentially while the server fails,
 * pauses while the page is hidden (`standby: 'when-hidden'`), slows down when no job
 * is active, and only checks now and then while pushes arrive. Views listen to
 * `changed`; no job list is kept anywhere else.
 */
import { IDisposable } from '@lumino/disposable';
import { IPoll, Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { IFailure, outageLine } from './pure/actions';
import { english, ITrans } from './pure/i18n';
import { elapsedNow, frequency, jobKey as key, sortJobs } from './pure/jobs';
import { failureOf, ISSEvent, readEvents, requestAPI } from './request';
import { IJobList, IJobSummary, IUnavailable } from './tokens';

/** Seconds between polls while the push channel is up (it brings every change). */
const PUSHED_POLL_S = 60;
/** Seconds before reconnecting the push channel, by failed attempt (the last repeats). */
const RECONNECT_S = [1, 2, 5, 10, 30];

/** The job list of every backend, for the sidebar. */
export class JobsModel implements IDisposable {
  constructor(
    intervalSeconds: number,
    private readonly _trans: ITrans = english
  ) {
    this._interval = intervalSeconds;
    this._poll = new Poll({
      auto: true,
      factory: () => this._fetch(),
      frequency: this._frequency(),
      name: 'jupyter-ddl:jobs',
      standby: 'when-hidden'
    });
    document.addEventListener('visibilitychange', this._onVisibility);
    void this._listen();
  }

  /** Every job, newest first. */
  get jobs(): IJobSummary[] {
    return sortJobs([...this._rows.values()], 'start');
  }

  /** Backends the server could not ask, each with its one-line reason. */
  get unavailable(): IUnavailable[] {
    return this._unavailable;
  }

  /** Whether the server's pushes arrive (else the list comes from polling). */
  get live(): boolean {
    return this._live;
  }

  /**
   * One line while the list cannot be fetched: the cause, the age of the rows still
   * shown (they are kept) and the next step; null while the server answers.
   */
  get error(): string | null {
    if (!this._failure) {
      return null;
    }
    const shownAge = this._okAt === null ? null : (performance.now() - this._okAt) / 1000;
    return outageLine(this._failure, shownAge, this._rows.size > 0, this._trans);
  }

  /** The list changed (any row, or the error). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** One job's row changed or went away (the job view refreshes on it). */
  get jobChanged(): ISignal<this, IJobSummary> {
    return this._jobChanged;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  set interval(seconds: number) {
    this._interval = seconds;
    this._poll.frequency = this._frequency();
  }

  /** Seconds a job has run by now: the server's figure counted on since it came. */
  elapsed(job: IJobSummary): number | null {
    // while the server does not answer, a running job's time stops where it was known
    const now = this._failedAt ?? performance.now();
    return elapsedNow(job, this._received.get(key(job)), now);
  }

  /** Poll now (after a cancel, or when the panel is shown). */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    document.removeEventListener('visibilitychange', this._onVisibility);
    this._poll.dispose();
    this._abort?.abort();
    this._wake();
    Signal.clearData(this);
  }

  private _frequency(): IPoll.Frequency {
    if (this._live) {
      return frequency(PUSHED_POLL_S, false);
    }
    return frequency(this._interval, [...this._rows.values()].every(j => j.finished));
  }

  private async _fetch(): Promise<void> {
    const pushes = this._pushes;
    try {
      const reply = await requestAPI<IJobList>('jobs');
      // a push that came while this request ran is newer than its answer
      if (pushes === this._pushes) {
        this._replace(reply.jobs);
        this._unavailable = reply.unavailable ?? [];
      }
      this._answered();
    } catch (error) {
      this._failure = failureOf(error);
      this._failedAt ??= performance.now();
      this._changed.emit();
      throw error; // the poll backs off
    }
    this._poll.frequency = this._frequency();
    this._changed.emit();
  }

  /** The push channel: open while the page is visible, reconnecting when it drops. */
  private async _listen(): Promise<void> {
    let attempt = 0;
    while (!this.isDisposed) {
      if (document.hidden) {
        await this._sleep(null);
        continue;
      }
      const abort = (this._abort = new AbortController());
      const failed = await readEvents(
        'events',
        {},
        events => {
          attempt = 0;
          this._onEvents(events);
        },
        abort.signal
      );
      if (this._live) {
        this._okAt = performance.now(); // an open push channel kept the list current until now
      }
      this._setLive(false);
      if (this.isDisposed || abort.signal.aborted) {
        continue; // hidden (or gone): the loop waits for the page to show again
      }
      if (failed) {
        console.debug(`jupyter-ddl: job list push channel: ${failed}; polling meanwhile`);
      }
      await this._sleep(RECONNECT_S[Math.min(attempt++, RECONNECT_S.length - 1)] * 1000);
    }
  }

  private _onEvents(events: ISSEvent[]): void {
    for (const ev of events) {
      const data = JSON.parse(ev.data);
      if (ev.event === 'jobs') {
        this._replace(data.jobs as IJobSummary[]);
        this._unavailable = (data.unavailable ?? []) as IUnavailable[];
        this._answered();
        this._setLive(true);
        (data.jobs as IJobSummary[]).forEach(job => this._jobChanged.emit(job));
      } else if (ev.event === 'job') {
        this._rows.set(key(data), data);
        this._received.set(key(data), performance.now());
        this._answered();
        this._jobChanged.emit(data);
      } else if (ev.event === 'removed') {
        const gone = this._rows.get(key(data));
        this._rows.delete(key(data));
        if (gone) {
          this._jobChanged.emit(gone);
        }
      } else if (ev.event === 'unavailable') {
        this._unavailable = data.unavailable as IUnavailable[];
      } else if (ev.event === 'error') {
        this._failure = { status: 500, message: String(data.message) };
      }
    }
    this._pushes++;
    this._changed.emit();
  }

  /** The server answered: what is shown is current again. */
  private _answered(): void {
    this._failure = null;
    this._failedAt = null;
    this._okAt = performance.now();
  }

  private _replace(jobs: IJobSummary[]): void {
    const now = performance.now();
    this._rows = new Map(jobs.map(j => [key(j), j]));
    this._received = new Map(jobs.map(j => [key(j), now]));
  }

  private _setLive(live: boolean): void {
    if (live !== this._live && !this.isDisposed) {
      this._live = live;
      this._poll.frequency = this._frequency();
      this._changed.emit();
    }
  }

  /** Wait `ms`, or (null) until the page shows again; dispose wakes it too. */
  private _sleep(ms: number | null): Promise<void> {
    return new Promise(resolve => {
      const timer = ms === null ? undefined : setTimeout(() => this._wake(), ms);
      this._waiting = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private _wake(): void {
    const waiting = this._waiting;
    this._waiting = null;
    waiting?.();
  }

  private _onVisibility = (): void => {
    if (document.hidden) {
      this._abort?.abort(); // a hidden page needs no pushes: the server stops looking
    } else {
      this._wake();
    }
  };

  private _rows = new Map<string, IJobSummary>();
  private _unavailable: IUnavailable[] = [];
  private _received = new Map<string, number>();
  private _pushes = 0;
  private _live = false;
  private _failure: IFailure | null = null;
  /** when the failures began, and when the list last came (performance.now() ms) */
  private _failedAt: number | null = null;
  private _okAt: number | null = null;
  private _interval: number;
  private _poll: Poll;
  private _abort: AbortController | null = null;
  private _waiting: (() => void) | null = null;
  private _changed = new Signal<this, void>(this);
  private _jobChanged = new Signal<this, IJobSummary>(this);
}
