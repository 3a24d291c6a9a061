/**
 * The job list's logic without a DOM: the row key, the poll frequency, sorting,
 * filtering and paging, short cell ids, start times. The model and the sidebar call
 * these; node unit tests cover them.
 */
import type { IPoll } from '@lumino/polling';

import { IJobSummary } from '../tokens';
import { formatElapsed, plainWords } from './format';
import { english, ITrans } from './i18n';

/** How much slower to poll when nothing is running. */
export const IDLE_FACTOR = 5;

/** The poll's frequency: `seconds` apart, `IDLE_FACTOR` slower when nothing runs. */
export function frequency(seconds: number, idle: boolean): IPoll.Frequency {
  const interval = Math.max(0.5, seconds) * 1000 * (idle ? IDLE_FACTOR : 1);
  return { interval, backoff: true, max: Math.max(interval, 60_000) };
}

/** A job's identity across backends (two backends may hold the same name). */
export function jobKey(job: { backend: string; name: string }): string {
  return `${job.backend}/${job.name}`;
}

export type SortKey = 'start' | 'name' | 'state';

/** Active jobs before ended ones, then by how bad the end was. */
const STATE_ORDER: Record<string, number> = {
  Running: 0,
  Restarting: 1,
  Pending: 2,
  Created: 3,
  Failed: 4,
  Cancelled: 5,
  Succeeded: 6
};

function startOf(job: IJobSummary): number {
  return job.started ?? job.created ?? 0;
}

/**
 * The jobs in `key` order (a new array). Start time is newest first; name and state
 * ascending; `descending` flips it. Ties fall back to newest first, then name, so the
 * order never depends on the server's.
 */
export function sortJobs(jobs: readonly IJobSummary[], key: SortKey, descending = false): IJobSummary[] {
  const newest = (a: IJobSummary, b: IJobSummary) =>
    startOf(b) - startOf(a) || a.name.localeCompare(b.name) || a.backend.localeCompare(b.backend);
  const primary = (a: IJobSummary, b: IJobSummary): number => {
    switch (key) {
      case 'name':
        return a.name.localeCompare(b.name);
      case 'state':
        return (STATE_ORDER[a.state] ?? 9) - (STATE_ORDER[b.state] ?? 9);
      default:
        return 0;
    }
  };
  const sign = descending ? -1 : 1;
  return [...jobs].sort((a, b) => sign * (primary(a, b) || newest(a, b)));
}

/** What the filter bar asks for; empty fields match everything. */
export interface IJobFilter {
  /** a state name, `active` (not finished) or `` */
  state: string;
  backend: string;
  /** words that must all appear in the name, notebook or strategy (any case) */
  text: string;
}

export const NO_FILTER: IJobFilter = { state: '', backend: '', text: '' };

export function filterJobs(jobs: readonly IJobSummary[], filter: IJobFilter): IJobSummary[] {
  const words = filter.text.toLowerCase().split(/\s+/).filter(Boolean);
  return jobs.filter(job => {
    if (filter.state === 'active' ? job.finished : filter.state && job.state !== filter.state) {
      return false;
    }
    if (filter.backend && job.backend !== filter.backend) {
      return false;
    }
    const hay = [job.name, job.notebook ?? '', job.strategy, job.backend].join(' ').toLowerCase();
    return words.every(w => hay.includes(w));
  });
}

/** One page of a list: its items, the page shown (clamped) and how many pages there are. */
export function page<T>(items: readonly T[], index: number, size: number): { items: T[]; index: number; pages: number } {
  const perPage = Math.max(1, Math.floor(size));
  const pages = Math.max(1, Math.ceil(items.length / perPage));
  const at = Math.min(Math.max(0, Math.floor(index) || 0), pages - 1);
  return { items: items.slice(at * perPage, (at + 1) * perPage), index: at, pages };
}

/** Enough of a cell id to tell cells apart (`3f2c9a1b`), the full id goes in the tooltip. */
export function shortCellId(id: string, length = 8): string {
  return id.length > length + 1 ? id.slice(0, length) : id;
}

/** How many jobs are running or on their way (the status-bar figure). */
export function activeCount(jobs: readonly IJobSummary[]): number {
  return jobs.filter(j => !j.finished).length;
}

/**
 * A start time as a person reads it: the local time today (`14:05`), else the date
 * and time (`26 Nov, 14:05`); the year only when it is not this year.
 */
export function formatStart(epochSeconds: number | null | undefined, now: Date = new Date()): string {
  if (epochSeconds === null || epochSeconds === undefined || !isFinite(epochSeconds)) {
    return '';
  }
  const at = new Date(epochSeconds * 1000);
  const time = at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (at.toDateString() === now.toDateString()) {
    return time;
  }
  const date = at.toLocaleDateString(undefined, {
    day: 'numeric',
    month: 'short',
    ...(at.getFullYear() === now.getFullYear() ? {} : { year: 'numeric' })
  });
  return `${date}, ${time}`;
}

/** Seconds a job has run: the server's figure plus the time since it came (not after the end). */
export function elapsedNow(job: IJobSummary, receivedMs: number | undefined, nowMs: number): number | null {
  if (job.elapsed === null || job.elapsed === undefined) {
    return null;
  }
  if (job.finished || receivedMs === undefined) {
    return job.elapsed;
  }
  return job.elapsed + Math.max(0, nowMs - receivedMs) / 1000;
}

/**
 * The jobs that ended since `seen` (key → finished, from the previous list), and the
 * new `seen`. A job first seen already finished did not end while watched: no news.
 */
export function endedSince(
  seen: ReadonlyMap<string, boolean>,
  jobs: readonly IJobSummary[]
): { ended: IJobSummary[]; seen: Map<string, boolean> } {
  const ended = jobs.filter(j => j.finished && seen.get(jobKey(j)) === false);
  return { ended, seen: new Map(jobs.map(j => [jobKey(j), j.finished])) };
}

/** The notification's one line: the end state, and for a failure the job's message. */
export function endedLine(job: IJobSummary, trans: ITrans = english): string {
  const cause = job.state === 'Failed' && job.message ? `: ${plainWords(job.message.split('\n')[0])}` : '';
  const line =
    job.state === 'Succeeded'
      ? trans.__('Training job %1 succeeded', job.name)
      : job.state === 'Failed'
        ? trans.__('Training job %1 failed%2', job.name, cause)
        : job.state === 'Cancelled'
          ? trans.__('Training job %1 was cancelled', job.name)
          : trans.__('Training job %1 ended', job.name);
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** `started 3:14 PM · 18s`: when a job started (else when it was created), in the
 * reader's local time, beside how long it ran. */
export function startedAndElapsed(
  job: Pick<IJobSummary, 'started' | 'created' | 'elapsed'>,
  now: Date = new Date(),
  trans: ITrans = english
): string {
  const start = formatStart(job.started ?? job.created, now);
  return [start ? trans.__('started %1', start) : '', formatElapsed(job.elapsed)].filter(Boolean).join(' · ');
}
