import assert from 'node:assert/strict';
import { test } from 'node:test';

import { inTimeOrder, internalNote } from '../src/pure/logs';
import { ILogLine } from '../src/tokens';

const line = (replica: string, offset: number, time: number | null): ILogLine => ({
  replica,
  offset,
  time,
  text: `${replica}:${offset}`,
  stream: 'stdout'
});

test('a backlog sent replica by replica is shown in time order', () => {
  const batch = [line('master-0', 0, 1), line('master-0', 1, 3), line('worker-0', 0, 2), line('worker-0', 1, 4)];
  assert.deepEqual(
    inTimeOrder(batch).map(l => l.text),
    ['master-0:0', 'worker-0:0', 'master-0:1', 'worker-0:1']
  );
});

test("a line without a time stays after its replica's previous line; ties keep arrival order", () => {
  const batch = [line('a', 0, 5), line('a', 1, null), line('b', 0, 5), line('b', 1, 1)];
  assert.deepEqual(
    inTimeOrder(batch).map(l => l.text),
    ['b:1', 'a:0', 'a:1', 'b:0']
  );
});

test("the local backend's cold-start note is not shown; the user's own lines and other notes are", () => {
  const note = (text: string, stream: string): ILogLine => ({ replica: 'master-0', offset: 0, time: 1, text, stream });
  assert.equal(internalNote(note('cold start: no warm interpreter was running', 'ddl')), true);
  assert.equal(internalNote(note('cold start: mine', 'stdout')), false);
  assert.equal(internalNote(note('master-0 ended with exit code 1; restart 1', 'ddl')), false);
});
