/**
 * One job for the job view: its detail and every replica's metric points.
 *
 * Polled like the list (back off on failure, pause while hidden), refreshed at once
 * when the pushed job list says this job changed, and no longer polled once the job
 * ended and its last points were read.
 */
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { JobsModel } from './model';
import { english, ITrans } from './pure/i18n';
import { frequency } from './pure/jobs';
import { failureOf, requestAPI } from './request';
import { IJobDetail, IJobSummary, IMetricPoint, IMetricsPage } from './tokens';

export class JobModel implements IDisposable {
  constructor(
    readonly name: string,
    intervalSeconds: number,
    jobs: JobsModel | null = null,
    private readonly _trans: ITrans = english
  ) {
    this._poll = new Poll({
      auto: true,
      factory: () => this._fetch(),
      frequency: frequency(intervalSeconds, false),
      name: `jupyter-ddl:job:${name}`,
      standby: 'when-hidden'
    });
    jobs?.jobChanged.connect(this._onJobChanged, this);
  }

  get detail(): IJobDetail | null {
    return this._detail;
  }

  /** Metric points by replica, each in log order (a restart's steps start again). */
  get points(): ReadonlyMap<string, IMetricPoint[]> {
    return this._points;
  }

  get error(): string | null {
    return this._error;
  }

  /** The server said the job does not exist (deleted meanwhile, or never here). */
  get gone(): boolean {
    return this._gone;
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

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  private _onJobChanged(_: JobsModel, job: IJobSummary): void {
    const shown = this._detail;
    if (job.name === this.name && (!shown || shown.state !== job.state || shown.ready !== job.ready)) {
      void this.refresh();
    }
  }

  /** One fetch at a time: two at once would read the same points twice. */
  private _fetch(): Promise<void> {
    const run = this._last.then(
      () => this._fetchOnce(),
      () => this._fetchOnce()
    );
    this._last = run.catch(() => undefined);
    return run;
  }

  private async _fetchOnce(): Promise<void> {
    const path = `jobs/${encodeURIComponent(this.name)}`;
    try {
      const detail = await requestAPI<IJobDetail>(path);
      await Promise.all(detail.replicas.map(r => this._fetchPoints(path, r.id)));
      this._detail = detail;
      this._error = null;
      this._gone = false;
    } catch (error) {
      const failure = failureOf(error);
      this._gone = failure.status === 404;
      this._error = this._gone
        ? this._trans.__('%1 no longer exists: it was deleted. What is shown is what was last known.', this.name)
        : failure.status === 0
          ? this._trans.__('The Jupyter server does not answer; what is shown is what was last known. Retrying.')
          : failure.message.split('\n')[0];
      this._changed.emit();
      throw error;
    }
    this._changed.emit();
    if (this._detail.finished) {
      // the points read after the end state was seen are the last ones
      void this._poll.stop();
    }
  }

  private async _fetchPoints(path: string, replica: string): Promise<void> {
    const offset = this._offsets.get(replica) ?? 0;
    const page = await requestAPI<IMetricsPage>(`${path}/metrics`, {}, { replica, offset });
    this._offsets.set(replica, page.next_offset);
    if (page.points.length) {
      this._points.set(replica, (this._points.get(replica) ?? []).concat(page.points));
    }
  }

  private _detail: IJobDetail | null = null;
  private _points = new Map<string, IMetricPoint[]>();
  private _offsets = new Map<string, number>();
  private _error: string | null = null;
  private _gone = false;
  private _poll: Poll;
  private _last: Promise<void> = Promise.resolve();
  private _changed = new Signal<this, void>(this);
}
