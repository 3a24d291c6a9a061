import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  basename,
  codeSpans,
  formatElapsed,
  formatNumber,
  formatResources,
  plainWords,
  replicaLabel,
  stateIcon
} from '../src/pure/format';

test('formatElapsed counts seconds, then minutes, then hours', () => {
  assert.equal(formatElapsed(null), '');
  assert.equal(formatElapsed(59.9), '59s');
  assert.equal(formatElapsed(75), '1m 15s');
  assert.equal(formatElapsed(3700), '1h 1m');
});

test('every state has its own glyph and an unknown state a neutral one', () => {
  const states = ['Running', 'Succeeded', 'Failed', 'Cancelled', 'Restarting'];
  assert.equal(new Set(states.map(stateIcon)).size, states.length);
  assert.equal(stateIcon('Pending'), '…');
});

test('formatNumber keeps four decimals and switches to exponents at the extremes', () => {
  assert.equal(formatNumber(0.123456), '0.1235');
  assert.equal(formatNumber(0), '0');
  assert.equal(formatNumber(0.0001), '1.00e-4');
  assert.equal(formatNumber(123456), '1.23e+5');
  assert.equal(formatNumber(NaN), 'NaN');
});

test('replicaLabel adds the rank only when known', () => {
  assert.equal(replicaLabel('worker-0', 1), 'worker-0 · rank 1');
  assert.equal(replicaLabel('worker-0', null), 'worker-0');
});

test('formatResources uses binary units and the dashboard words', () => {
  assert.equal(
    formatResources({ cpu_percent: 57.4, memory_bytes: 1.2 * 2 ** 30, gpu_util_percent: 93, gpu_memory_mb: 10445 }),
    'CPU 57%, memory 1.2 GiB, GPU 93%, GPU memory 10.2 GiB'
  );
  assert.equal(formatResources({ cpu: 0.5 }), 'CPU 50%');
  assert.equal(formatResources(undefined), '');
});


test('basename keeps the last path part', () => {
  assert.equal(basename('work/train.ipynb'), 'train.ipynb');
  assert.equal(basename('train.ipynb'), 'train.ipynb');
});

test('the commands a server message names in backticks are code, never backticks', () => {
  assert.deepEqual(codeSpans('no job named x; `%ddl list` shows the jobs'), [
    { text: 'no job named x; ', code: false },
    { text: '%ddl list', code: true },
    { text: ' shows the jobs', code: false }
  ]);
  assert.deepEqual(codeSpans('`a` and `b`').map(s => s.code), [true, false, true]);
  assert.deepEqual(codeSpans('an odd ` stays'), [{ text: 'an odd ` stays', code: false }]);
  assert.deepEqual(codeSpans(''), []);
  assert.equal(plainWords('choose one (`%ddl config kube_context=NAME`)'), 'choose one (%ddl config kube_context=NAME)');
});
