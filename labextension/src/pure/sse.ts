/**
 * Server-sent events: the text protocol split into events (pure, no I/O).
 */

/** One parsed server-sent event. */
export interface ISSEvent {
  event: string;
  id: string | null;
  data: string;
}

/** Split an SSE text buffer into complete events and the unfinished rest. */
export function parseSSE(buffer: string): { events: ISSEvent[]; rest: string } {
  const events: ISSEvent[] = [];
  const blocks = buffer.split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    const ev: ISSEvent = { event: 'message', id: null, data: '' };
    let isComment = true;
    for (const line of block.split('\n')) {
      if (line.startsWith(':') || !line) {
        continue;
      }
      isComment = false;
      const [field, ...value] = line.split(': ');
      const v = value.join(': ');
      if (field === 'event') {
        ev.event = v;
      } else if (field === 'id') {
        ev.id = v;
      } else if (field === 'data') {
        ev.data = ev.data ? `${ev.data}\n${v}` : v;
      }
    }
    if (!isComment) {
      events.push(ev);
    }
  }
  return { events, rest };
}
