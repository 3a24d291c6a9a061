import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseSSE } from '../src/pure/sse';

test('complete events are parsed, the unfinished tail is kept', () => {
  const { events, rest } = parseSSE('event: jobs\nid: 4\ndata: {"a":\ndata: 1}\n\n: ping\n\ndata: x: y\n\nevent: par');
  assert.deepEqual(events, [
    { event: 'jobs', id: '4', data: '{"a":\n1}' },
    { event: 'message', id: null, data: 'x: y' }
  ]);
  assert.equal(rest, 'event: par');
});
