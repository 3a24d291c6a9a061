/**
 * The merged log's order: lines of every replica by the time they were written. The
 * server sends a backlog replica by replica; each batch is put in time order before
 * it is shown (a line without a time keeps the time of the line before it from the
 * same replica, so a replica's own order never changes).
 */
import { ILogLine } from '../tokens';

export function inTimeOrder(lines: readonly ILogLine[]): ILogLine[] {
  const last = new Map<string, number>();
  const keyed = lines.map((line, index) => {
    const time = line.time ?? last.get(line.replica) ?? -Infinity;
    last.set(line.replica, time);
    return { line, time, index };
  });
  keyed.sort((a, b) => a.time - b.time || a.index - b.index);
  return keyed.map(k => k.line);
}

/**
 * A note about how jupyter-ddl ran the job, not about the job: the local backend's
 * `cold start: …` (a replica started without its warm interpreter). The log file keeps
 * it (`%ddl logs`); the log view does not open on it (the same rule as
 * jupyter_ddl/core/stream.py internal_note).
 */
export function internalNote(line: ILogLine): boolean {
  return line.stream === 'ddl' && line.text.startsWith('cold start: '); // i18n: the log's own words, matched
}
