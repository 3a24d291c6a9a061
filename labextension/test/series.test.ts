import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  buildCharts,
  linearAxis,
  logAxis,
  moveStep,
  position,
  prefersLog,
  repeatedLines,
  stepsOf,
  tickLabel,
  values,
  valuesAt,
  yAxis
} from '../src/pure/series';
import { IMetricPoint } from '../src/tokens';

const pt = (step: number, values: Record<string, number>, source?: IMetricPoint['source']): IMetricPoint => ({
  step,
  offset: step,
  values,
  source
});

test('one chart per metric and source, one series per replica in the job order', () => {
  const points = new Map([
    ['worker-0', [pt(1, { loss: 2 }, 'report'), pt(1, { loss: 3 }, 'keras')]],
    ['master-0', [pt(1, { loss: 1 }, 'report')]]
  ]);
  const charts = buildCharts(points, ['master-0', 'worker-0']);
  assert.deepEqual(
    charts.map(c => c.key),
    ['loss|report', 'loss|keras']
  );
  assert.deepEqual(
    charts[0].series.map(s => [s.replica, s.colour]),
    [
      ['master-0', 0],
      ['worker-0', 1]
    ]
  );
});

test('a restart (step going back) starts a new segment; NaN leaves a gap', () => {
  const points = new Map([['w', [pt(1, { l: 1 }), pt(2, { l: 2 }), pt(1, { l: 3 }), pt(2, { l: NaN }), pt(3, { l: 4 })]]]);
  const [chart] = buildCharts(points, ['w']);
  assert.deepEqual(chart.series[0].segments, [
    [
      [1, 1],
      [2, 2]
    ],
    [[1, 3]],
    [[3, 4]]
  ]);
  assert.equal(chart.series[0].latest, 4);
  assert.deepEqual(values(chart.series), [1, 2, 3, 4]);
});

test('log scale only for positive values spanning three decades', () => {
  assert.equal(prefersLog([0.001, 1]), true);
  assert.equal(prefersLog([0.01, 1]), false);
  assert.equal(prefersLog([-1, 1000]), false);
  assert.equal(prefersLog([]), false);
});

test('linear axes have round ticks covering the values', () => {
  const axis = linearAxis(0.13, 0.87);
  assert.deepEqual(axis.ticks, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]);
  assert.equal(position(axis, 0.5), 0.5);
  const flat = linearAxis(3, 3);
  assert.ok(flat.lo < 3 && flat.hi > 3);
  assert.ok(linearAxis(0, 3, 5, true).ticks.every(Number.isInteger));
});

test('log axes run over whole decades; zero cannot be placed', () => {
  const axis = logAxis([0.01, 5]);
  assert.equal(axis.lo, 0.01);
  assert.equal(axis.hi, 10);
  assert.equal(position(axis, 0.1), 1 / 3);
  assert.ok(Number.isNaN(position(axis, 0)));
  assert.equal(yAxis([], false).log, false);
  assert.equal(tickLabel(1e-13, true), '1e-13');
  assert.equal(tickLabel(0.25, false), '0.25');
});

test('valuesAt picks each series point nearest the step, the later one on a tie', () => {
  const [chart] = buildCharts(new Map([['w', [pt(1, { l: 1 }), pt(3, { l: 3 }), pt(1, { l: 5 })]]]), ['w']);
  const [hit] = valuesAt(chart.series, 2);
  assert.deepEqual(hit.point, [1, 5]);
});

test('the keyboard cursor moves among the steps any replica has, from the latest', () => {
  const series = [
    { replica: 'worker-0', colour: 0, segments: [[[0, 1], [10, 0.5]], [[0, 0.9], [20, 0.3]]] as [number, number][][], latest: 0.3 },
    { replica: 'worker-1', colour: 1, segments: [[[5, 1], [10, 0.4]]] as [number, number][][], latest: 0.4 }
  ];
  const steps = stepsOf(series);
  assert.deepEqual(steps, [0, 5, 10, 20]);
  assert.equal(moveStep(steps, null, 'ArrowLeft'), 20); // the first key press shows the latest
  assert.equal(moveStep(steps, 20, 'ArrowLeft'), 10);
  assert.equal(moveStep(steps, 0, 'ArrowLeft'), 0);
  assert.equal(moveStep(steps, 20, 'ArrowRight'), 20);
  assert.equal(moveStep(steps, 7, 'ArrowRight'), 20); // from between stops: the next one's neighbour
  assert.equal(moveStep(steps, 10, 'Home'), 0);
  assert.equal(moveStep(steps, 0, 'End'), 20);
  assert.equal(moveStep(steps, 0, 'PageUp'), 5);
  assert.equal(moveStep(steps, 10, 'Enter'), null);
  assert.equal(moveStep([], null, 'End'), null);
});

test('a line that repeats an earlier one is named, with its place among the copies', () => {
  const line = (replica: string, colour: number, points: [number, number][][]) => ({
    replica,
    colour,
    segments: points,
    latest: 0
  });
  const same: [number, number][][] = [[[0, 1.5], [1, 0.75], [2, 0.5]]];
  const repeats = repeatedLines([
    line('master-0', 0, same),
    line('worker-0', 1, [[[0, 1.5], [1, 0.75], [2, 0.5]]]),
    line('worker-1', 2, [[[0, 1.5], [1, 0.7], [2, 0.5]]]),
    line('worker-2', 3, [[[0, 1.5], [1, 0.75], [2, 0.5]]]),
    line('worker-3', 4, [[]]),
    line('worker-4', 5, [[]])
  ]);
  assert.deepEqual(Object.fromEntries(repeats), {
    'worker-0': { of: 'master-0', copy: 1 },
    'worker-2': { of: 'master-0', copy: 2 }
  });
  // a restart makes another line: the same values in other attempts are not a copy
  assert.equal(repeatedLines([line('a', 0, [[[0, 1]], [[1, 2]]]), line('b', 1, [[[0, 1], [1, 2]]])]).size, 0);
});
