import assert from 'node:assert/strict';
import { test } from 'node:test';

import { actionAllowed, actionFailedLine, age, confirmText, outageLine } from '../src/pure/actions';

const running = { name: 'mnist-ddp', backend: 'local', state: 'Running' as const, finished: false, total: 4 };
const done = { ...running, state: 'Succeeded' as const, finished: true };
const odd = { ...running, state: 'Unknown' as unknown as 'Running' };

test('cancel is offered only while the job runs, delete for any known state', () => {
  assert.equal(actionAllowed('cancel', running).ok, true);
  assert.equal(actionAllowed('delete', running).ok, true);
  assert.equal(actionAllowed('delete', done).ok, true);
  const ended = actionAllowed('cancel', done);
  assert.equal(ended.ok, false);
  assert.match(ended.why, /has ended \(Succeeded\)/);
  for (const action of ['cancel', 'delete'] as const) {
    const unknown = actionAllowed(action, odd);
    assert.equal(unknown.ok, false);
    assert.match(unknown.why, /unknown state \(Unknown\): refresh/);
  }
});

test('the confirmation states the consequences before the action runs', () => {
  const cancel = confirmText('cancel', running);
  assert.equal(cancel.title, 'Cancel mnist-ddp?');
  assert.match(cancel.body, /Stops all 4 replicas/);
  assert.match(cancel.body, /record, logs and metrics so far are kept/);
  assert.match(cancel.body, /cannot be resumed/);
  assert.equal(confirmText('cancel', { ...running, total: 1 }).body.startsWith('Stops its one replica'), true);
  const del = confirmText('delete', done);
  assert.match(del.body, /^Removes the job's record, logs and metrics from the local backend/);
  assert.match(del.body, /cannot be undone/);
  assert.match(confirmText('delete', running).body, /^It is still running: all 4 replicas are stopped first/);
  assert.notEqual(del.accept, del.reject);
});

test('a job deleted meanwhile is one plain line, no error wall', () => {
  const line = actionFailedLine('cancel', 'mnist-ddp', { status: 404, message: "no job 'mnist-ddp'\ntrace" });
  assert.equal(line, 'mnist-ddp no longer exists: it was deleted meanwhile, so there is nothing to cancel.');
  assert.match(actionFailedLine('delete', 'x', { status: 0, message: 'Failed to fetch' }), /server does not answer/);
  const other = actionFailedLine('delete', 'x', { status: 500, message: 'disk full\nTraceback...' });
  assert.equal(other, 'Could not delete x: disk full');
});

test('the outage line says what is wrong, how old the rows are, and the next step', () => {
  assert.equal(
    outageLine({ status: 0, message: 'Failed to fetch' }, 125, true),
    'The Jupyter server does not answer; the jobs below are from 2 min ago. ' +
      'Retrying; check that the server runs, or press Refresh.'
  );
  assert.equal(
    outageLine({ status: 503, message: 'proxy' }, null, false),
    'The Jupyter server does not answer. Retrying; check that the server runs, or press Refresh.'
  );
  assert.match(outageLine({ status: 500, message: 'boom\nmore' }, 5, true), /^The job list could not be read \(boom\); the jobs below are from 5 s ago/);
  assert.doesNotMatch(outageLine({ status: 0, message: '' }, 5, true), /\n/);
  assert.equal(age(7300), '2 h');
  assert.equal(age(-3), '0 s');
});
