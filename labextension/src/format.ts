/**
 * Small pure formatting helpers shared by the views.
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

/** Make an element with a class and optional text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** `work/train.ipynb` → `train.ipynb`. */
export function basename(path: string): string {
  return path.split('/').pop() || path;
}
