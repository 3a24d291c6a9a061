/**
 * Small pure formatting helpers shared by the views (no DOM: unit-tested in node).
 */

/** `75` → `1m 15s`; `3700` → `1h 1m`. */
export function formatElapsed(seconds: number | null): string {
  if (seconds === null || seconds === undefined) {
    return '';
  }
  const s = Math.floor(seconds);
  if (s < 60) {
    return `${s}s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)}m ${s % 60}s`;
  }
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** A glyph per job state: the list reads at a glance without colour alone. */
export function stateIcon(state: string): string {
  switch (state) {
    case 'Running':
      return '▶';
    case 'Succeeded':
      return '✔';
    case 'Failed':
      return '✖';
    case 'Cancelled':
      return '■';
    case 'Restarting':
      return '↻';
    default:
      return '…';
  }
}

/** A short number for tables and chart axes. */
export function formatNumber(value: number): string {
  if (!isFinite(value)) {
    return String(value);
  }
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e5)) {
    return value.toExponential(2);
  }
  return String(Math.round(value * 1e4) / 1e4);
}

/** `worker-0 · rank 1`: a replica with its rank, as every surface shows it. */
export function replicaLabel(id: string, rank: number | null | undefined): string {
  return rank === null || rank === undefined ? id : `${id} · rank ${rank}`;
}

/** Byte counts in binary units: `1.2 GiB`. */
function bytes(value: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(value) >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return i ? `${value.toFixed(1)} ${units[i]}` : `${Math.round(value)} B`;
}

/**
 * `CPU 57%, memory 1.2 GiB, GPU 93%, GPU memory 10.2 GiB`: the same words as the
 * cell's dashboard (jupyter_ddl/widgets/state.py format_resources).
 */
export function formatResources(values: Record<string, number> | undefined): string {
  const v = values ?? {};
  const out: string[] = [];
  if (v.cpu_percent !== undefined) {
    out.push(`CPU ${Math.round(v.cpu_percent)}%`);
  }
  if (v.memory_mb !== undefined) {
    out.push(`memory ${bytes(v.memory_mb * 2 ** 20)}`);
  } else if (v.memory_bytes !== undefined) {
    out.push(`memory ${bytes(v.memory_bytes)}`);
  }
  if (v.gpu_util_percent !== undefined) {
    out.push(`GPU ${Math.round(v.gpu_util_percent)}%`);
  }
  if (v.gpu_memory_mb !== undefined) {
    out.push(`GPU memory ${bytes(v.gpu_memory_mb * 2 ** 20)}`);
  }
  if (v.cpu !== undefined && v.cpu_percent === undefined) {
    out.push(`CPU ${Math.round(v.cpu * 100)}%`); // metrics.k8s.io: cores
  }
  return out.join(', ');
}

/** `work/train.ipynb` → `train.ipynb`. */
export function basename(path: string): string {
  return path.split('/').pop() || path;
}

/** One run of a server message: plain words, or a command it names. */
export interface ISpan {
  text: string;
  code: boolean;
}

/**
 * The server writes the commands its messages name in backticks, the way a terminal
 * reader sees them (`` `%ddl list` shows the jobs ``): the lab shows them as code,
 * never the backticks. An unpaired backtick stays as it is.
 */
export function codeSpans(text: string): ISpan[] {
  const out: ISpan[] = [];
  const pattern = /`([^`\n]+)`/g;
  let at = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > at) {
      out.push({ text: text.slice(at, m.index), code: false });
    }
    out.push({ text: m[1], code: true });
    at = m.index + m[0].length;
  }
  if (at < text.length) {
    out.push({ text: text.slice(at), code: false });
  }
  return out;
}

/** The message as plain words (a notification, a tooltip): the commands without backticks. */
export function plainWords(text: string): string {
  return codeSpans(text)
    .map(s => s.text)
    .join('');
}
