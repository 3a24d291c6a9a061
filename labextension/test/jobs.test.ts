import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  activeCount,
  elapsedNow,
  endedLine,
  endedSince,
  filterJobs,
  formatStart,
  frequency,
  jobKey,
  NO_FILTER,
  page,
  shortCellId,
  sortJobs,
  startedAndElapsed
} from '../src/pure/jobs';
import { IJobSummary, JobState } from '../src/tokens';

function job(name: string, state: JobState, started: number | null, extra: Partial<IJobSummary> = {}): IJobSummary {
  const finished = ['Succeeded', 'Failed', 'Cancelled'].includes(state);
  return {
    name,
    backend: 'local',
    namespace: null,
    strategy: 'ddp',
    state,
    finished,
    ready: 0,
    total: 2,
    created: started,
    started,
    ended: null,
    elapsed: 10,
    notebook: 'work/train.ipynb',
    message: null,
    metrics: {},
    ...extra
  };
}

const jobs = [
  job('b-job', 'Succeeded', 100),
  job('a-job', 'Running', 50),
  job('c-job', 'Failed', 300, { backend: 'kubernetes', notebook: 'other/eval.ipynb' })
];

test('the poll slows down when idle and backs off up to a minute at least', () => {
  assert.deepEqual(frequency(2, false), { interval: 2000, backoff: true, max: 60_000 });
  assert.equal(frequency(2, true).interval, 10_000);
  assert.equal(frequency(0, false).interval, 500);
  assert.equal(frequency(100, false).max, 100_000);
});

test('sorting by start (newest first), name and state, either way', () => {
  assert.deepEqual(sortJobs(jobs, 'start').map(j => j.name), ['c-job', 'b-job', 'a-job']);
  assert.deepEqual(sortJobs(jobs, 'start', true).map(j => j.name), ['a-job', 'b-job', 'c-job']);
  assert.deepEqual(sortJobs(jobs, 'name').map(j => j.name), ['a-job', 'b-job', 'c-job']);
  assert.deepEqual(sortJobs(jobs, 'state').map(j => j.state), ['Running', 'Failed', 'Succeeded']);
  assert.deepEqual(jobs.map(j => j.name), ['b-job', 'a-job', 'c-job'], 'the input is not reordered');
});

test('a job without any time sorts last by start', () => {
  const none = job('z', 'Pending', null, { created: null });
  assert.equal(sortJobs([none, ...jobs], 'start').at(-1)!.name, 'z');
});

test('filters by state, "active", backend and every word of the text', () => {
  assert.deepEqual(filterJobs(jobs, NO_FILTER).length, 3);
  assert.deepEqual(filterJobs(jobs, { ...NO_FILTER, state: 'Failed' }).map(j => j.name), ['c-job']);
  assert.deepEqual(filterJobs(jobs, { ...NO_FILTER, state: 'active' }).map(j => j.name), ['a-job']);
  assert.deepEqual(filterJobs(jobs, { ...NO_FILTER, backend: 'kubernetes' }).map(j => j.name), ['c-job']);
  assert.deepEqual(filterJobs(jobs, { ...NO_FILTER, text: 'EVAL c-' }).map(j => j.name), ['c-job']);
  assert.deepEqual(filterJobs(jobs, { ...NO_FILTER, text: 'train nothing' }), []);
});

test('paging clamps the page and always has one', () => {
  const items = Array.from({ length: 205 }, (_, i) => i);
  assert.deepEqual(page(items, 0, 50).items.length, 50);
  const last = page(items, 99, 50);
  assert.equal(last.index, 4);
  assert.equal(last.pages, 5);
  assert.deepEqual(last.items, [200, 201, 202, 203, 204]);
  assert.deepEqual(page([], 3, 50), { items: [], index: 0, pages: 1 });
  assert.equal(page(items, -1, 0).items.length, 1);
});

test('cell ids are cut to 8 characters, short ones kept', () => {
  assert.equal(shortCellId('3f2c9a1b-7e4d-4a0c-9b1e-2f6d8c0a5e11'), '3f2c9a1b');
  assert.equal(shortCellId('abc'), 'abc');
  assert.equal(jobKey({ backend: 'local', name: 'x' }), 'local/x');
  assert.equal(activeCount(jobs), 1);
});

test('start times: the time today, the date otherwise, the year when not this year', () => {
  const now = new Date(2026, 10, 26, 15, 0);
  const today = new Date(2026, 10, 26, 14, 5).getTime() / 1000;
  const earlier = new Date(2026, 10, 20, 9, 30).getTime() / 1000;
  const lastYear = new Date(2025, 0, 2, 9, 30).getTime() / 1000;
  assert.match(formatStart(today, now), /^(14|0?2).05/, "the local time of day, in the locale's clock");
  assert.doesNotMatch(formatStart(earlier, now), /2026/);
  assert.match(formatStart(earlier, now), /20/);
  assert.match(formatStart(lastYear, now), /2025/);
  assert.equal(formatStart(null, now), '');
});

test('elapsed counts on for a running job and stops for a finished one', () => {
  assert.equal(elapsedNow(jobs[1], 1000, 3000), 12);
  assert.equal(elapsedNow(jobs[0], 1000, 3000), 10);
  assert.equal(elapsedNow(jobs[1], undefined, 3000), 10);
  assert.equal(elapsedNow({ ...jobs[1], elapsed: null }, 1000, 3000), null);
  assert.equal(elapsedNow(jobs[1], 5000, 3000), 10, 'a clock going back adds nothing');
});

test('a job is news when it ends while watched, once', () => {
  const running = job('x', 'Running', 1);
  const done = job('x', 'Failed', 1, { message: 'master-0 exited with code 1\nthen more' });
  const old = job('old', 'Succeeded', 1);
  let step = endedSince(new Map(), [running, old]);
  assert.deepEqual(step.ended, [], 'the first list only sets what was seen');
  step = endedSince(step.seen, [done, old]);
  assert.deepEqual(step.ended.map(j => j.name), ['x']);
  assert.deepEqual(endedSince(step.seen, [done, old]).ended, [], 'said once');
  assert.equal(endedLine(done), 'Training job x failed: master-0 exited with code 1');
  assert.equal(endedLine(job('y', 'Cancelled', 1)), 'Training job y was cancelled');
  assert.ok(endedLine(job('z'.repeat(300), 'Succeeded', 1)).length <= 200);
});

test('the job view says when a job started beside how long it ran', () => {
  const now = new Date(2026, 10, 26, 15, 0);
  const started = new Date(2026, 10, 26, 14, 5).getTime() / 1000;
  assert.match(startedAndElapsed({ started, created: started - 2, elapsed: 18 }, now), /^started (14|0?2).05.* · 18s$/);
  assert.match(startedAndElapsed({ started: null, created: started, elapsed: null }, now), /^started (14|0?2).05[^·]*$/);
  assert.equal(startedAndElapsed({ started: null, created: null, elapsed: null }, now), '');
});
