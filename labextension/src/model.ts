/**
 * Models: what the server reports, refreshed by polling.
 *
 * Polls back off exponentially while the server fails, pause while the page is
 * hidden (`standby: 'when-hidden'`), and slow down when no job is active. Views
 * listen to `changed`; no job list is kept anywhere else.
 */
import { IDisposable } from '@lumino/disposable';
import { IPoll, Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { requestAPI } from './request';
import {
  IJobDetail,
  IJobList,
  IJobSummary,
  IMetricPoint,
  IMetricsPage,
  IUnavailable
} from './tokens';

/** How much slower to poll when nothing is running. */
const IDLE_FACTOR = 5;

function frequency(seconds: number, idle: boolean): IPoll.Frequency {
  const interval = Math.max(0.5, seconds) * 1000 * (idle ? IDLE_FACTOR : 1);
  return { interval, backoff: true, max: Math.max(interval, 60_000) };
}

/** The job list of every backend, for the sidebar. */
export class JobsModel implements IDisposable {
  constructor(intervalSeconds: number) {
    this._interval = intervalSeconds;
    this._poll = new Poll({
      auto: true,
      factory: () => this._fetch(),
      frequency: frequency(intervalSeconds, false),
      name: 'jupyter-ddl:jobs',
      standby: 'when-hidden'
    });
  }

  get jobs(): IJobSummary[] {
    return this._jobs;
  }

  get error(): string | null {
    return this._error;
  }

  /** Backends the last poll could not ask, each with its one-line reason. */
  get unavailable(): IUnavailable[] {
    return this._unavailable;
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  set interval(seconds: number) {
    this._interval = seconds;
    this._poll.frequency = frequency(seconds, this._idle());
  }

  /** Poll now (after a cancel, or when the panel is shown). */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  private _idle(): boolean {
    return this._jobs.every(j => j.finished);
  }

  private async _fetch(): Promise<void> {
    try {
      const reply = await requestAPI<IJobList>('jobs');
      this._jobs = reply.jobs;
      this._unavailable = reply.unavailable ?? [];
      this._error = null;
    } catch (error) {
      this._error = (error as Error).message;
      this._changed.emit();
      throw error; // the poll backs off
    }
    this._poll.frequency = frequency(this._interval, this._idle());
    this._changed.emit();
  }

  private _jobs: IJobSummary[] = [];
  private _unavailable: IUnavailable[] = [];
  private _error: string | null = null;
  private _interval: number;
  private _poll: Poll;
  private _changed = new Signal<this, void>(this);
}

/** One job: its detail and metric series; polling stops once the job ended. */
export class JobModel implements IDisposable {
  constructor(
    readonly name: string,
    intervalSeconds: number
  ) {
    this._poll = new Poll({
      auto: true,
      factory: () => this._fetch(),
      frequency: frequency(intervalSeconds, false),
      name: `jupyter-ddl:job:${name}`,
      standby: 'when-hidden'
    });
  }

  get detail(): IJobDetail | null {
    return this._detail;
  }

  get points(): IMetricPoint[] {
    return this._points;
  }

  get error(): string | null {
    return this._error;
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  /** Ask the server to cancel; the state shown comes from the next poll. */
  async cancel(): Promise<void> {
    await requestAPI(`jobs/${encodeURIComponent(this.name)}/cancel`, { method: 'POST' });
    await this.refresh();
  }

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  private async _fetch(): Promise<void> {
    const path = `jobs/${encodeURIComponent(this.name)}`;
    try {
      this._detail = await requestAPI<IJobDetail>(path);
      const page = await requestAPI<IMetricsPage>(`${path}/metrics`, {}, {
        offset: this._metricsOffset,
        replica: this._metricsReplica ?? undefined
      });
      this._metricsReplica = page.replica;
      this._metricsOffset = page.next_offset;
      this._points = this._points.concat(page.points);
      this._error = null;
    } catch (error) {
      this._error = (error as Error).message;
      this._changed.emit();
      throw error;
    }
    this._changed.emit();
    if (this._detail.finished) {
      // one more fetch after the end is not needed: the end state is final
      void this._poll.stop();
    }
  }

  private _detail: IJobDetail | null = null;
  private _points: IMetricPoint[] = [];
  private _metricsOffset = 0;
  private _metricsReplica: string | null = null;
  private _error: string | null = null;
  private _poll: Poll;
  private _changed = new Signal<this, void>(this);
}
