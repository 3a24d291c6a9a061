/**
 * What the charts draw, from the metric points (pure functions, no DOM).
 *
 * One chart per metric name and source (a `report()` loss and a Keras progress
 * loss are different series: drawn together they double-count and saw-tooth), one
 * series per replica in it, each cut into segments where a restarted attempt's
 * steps go back, so a restart is a gap and never a line back to step 0.
 */
import { IMetricPoint, MetricSource } from '../tokens';

export type Point = [number, number]; // [step, value]

export interface ISeries {
  replica: string;
  /** index of the replica in the job: the same colour in every chart */
  colour: number;
  segments: Point[][];
  latest: number;
}

export interface IChartData {
  key: string;
  metric: string;
  source: MetricSource;
  series: ISeries[];
}

export interface IAxis {
  lo: number;
  hi: number;
  ticks: number[];
  log: boolean;
}

const SOURCES: MetricSource[] = ['report', 'keras', 'log'];

/** Charts for every replica's points (each list in log order); `replicas` sets the order. */
export function buildCharts(
  points: ReadonlyMap<string, IMetricPoint[]>,
  replicas: string[]
): IChartData[] {
  const charts = new Map<string, IChartData>();
  const order = [...replicas, ...[...points.keys()].filter(r => !replicas.includes(r))];
  order.forEach((replica, colour) => {
    const mine = new Map<string, ISeries>();
    for (const p of points.get(replica) ?? []) {
      const source = p.source ?? 'log';
      for (const [metric, value] of Object.entries(p.values)) {
        const key = `${metric}|${source}`;
        let chart = charts.get(key);
        if (!chart) {
          chart = { key, metric, source, series: [] };
          charts.set(key, chart);
        }
        let series = mine.get(key);
        if (!series) {
          series = { replica, colour, segments: [[]], latest: value };
          mine.set(key, series);
          chart.series.push(series);
        }
        addPoint(series, p.step, value);
      }
    }
  });
  const all = [...charts.values()];
  all.forEach(c => c.series.forEach(s => (s.segments = s.segments.filter(g => g.length))));
  return all.sort((a, b) => SOURCES.indexOf(a.source) - SOURCES.indexOf(b.source));
}

function addPoint(series: ISeries, step: number, value: number): void {
  const segment = series.segments[series.segments.length - 1];
  if (!Number.isFinite(value)) {
    if (segment.length) {
      series.segments.push([]); // nan/inf: a gap
    }
    return;
  }
  const last = segment[segment.length - 1];
  if (last && step < last[0]) {
    series.segments.push([[step, value]]); // a new attempt starts over
  } else {
    segment.push([step, value]);
  }
  series.latest = value;
}

/** Every value the chart draws. */
export function values(series: ISeries[]): number[] {
  return series.flatMap(s => s.segments.flatMap(g => g.map(p => p[1])));
}

/** Log scale when the values are positive (zeros allowed) and span 3 decades or more. */
export function prefersLog(vals: number[]): boolean {
  const positive = vals.filter(v => v > 0);
  if (!positive.length || vals.some(v => v < 0)) {
    return false;
  }
  return Math.log10(Math.max(...positive) / Math.min(...positive)) >= 3;
}

/** 1, 2 or 5 times a power of ten, near `raw`. */
function niceStep(raw: number): number {
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / power;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * power;
}

/** A linear axis over [lo, hi] with about `count` round ticks. */
export function linearAxis(lo: number, hi: number, count = 5, integer = false): IAxis {
  if (lo === hi) {
    const pad = Math.abs(lo) * 0.1 || 1;
    lo -= pad;
    hi += pad;
  }
  let step = niceStep((hi - lo) / count);
  if (integer) {
    step = Math.max(1, Math.round(step));
  }
  const first = Math.floor(lo / step) * step;
  const last = Math.ceil(hi / step) * step;
  const ticks: number[] = [];
  for (let t = first; t <= last + step / 2; t += step) {
    ticks.push(Number(t.toPrecision(12)));
  }
  return { lo: first, hi: last, ticks, log: false };
}

/** A log axis over the positive values: whole decades, at most `count` labelled. */
export function logAxis(vals: number[], count = 6): IAxis {
  const positive = vals.filter(v => v > 0);
  let lo = Math.floor(Math.log10(Math.min(...positive)));
  let hi = Math.ceil(Math.log10(Math.max(...positive)));
  if (lo === hi) {
    lo -= 1;
    hi += 1;
  }
  const every = Math.max(1, Math.ceil((hi - lo) / count));
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e += every) {
    ticks.push(Math.pow(10, e));
  }
  return { lo: Math.pow(10, lo), hi: Math.pow(10, hi), ticks, log: true };
}

/** The y axis for these values, log or linear. */
export function yAxis(vals: number[], log: boolean): IAxis {
  if (log && vals.some(v => v > 0)) {
    return logAxis(vals);
  }
  const lo = vals.length ? Math.min(...vals) : 0;
  const hi = vals.length ? Math.max(...vals) : 1;
  return linearAxis(lo, hi);
}

/** Where `value` sits on the axis, 0 (bottom/left) to 1; NaN when it cannot be drawn. */
export function position(axis: IAxis, value: number): number {
  if (axis.log) {
    if (value <= 0) {
      return NaN;
    }
    return (Math.log10(value) - Math.log10(axis.lo)) / (Math.log10(axis.hi) - Math.log10(axis.lo));
  }
  return (value - axis.lo) / (axis.hi - axis.lo);
}

/** A tick label: `1e-13` on log axes, a short number otherwise. */
export function tickLabel(value: number, log: boolean): string {
  if (log) {
    const e = Math.round(Math.log10(value));
    return Math.abs(e) >= 3 ? `1e${e}` : String(Math.pow(10, e));
  }
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e5)) {
    return value.toExponential(1);
  }
  return String(Number(value.toPrecision(6)));
}

/** Each series' value nearest to `step` (the later attempt wins a tie), for hovering. */
export function valuesAt(series: ISeries[], step: number): { series: ISeries; point: Point }[] {
  const out: { series: ISeries; point: Point }[] = [];
  for (const s of series) {
    let best: Point | null = null;
    for (const p of s.segments.flat()) {
      if (!best || Math.abs(p[0] - step) <= Math.abs(best[0] - step)) {
        best = p;
      }
    }
    if (best) {
      out.push({ series: s, point: best });
    }
  }
  return out;
}

/** Every step any series has a value at, ascending, once each (the keyboard cursor's stops). */
export function stepsOf(series: ISeries[]): number[] {
  const all = new Set<number>();
  for (const s of series) {
    for (const p of s.segments.flat()) {
      all.add(p[0]);
    }
  }
  return [...all].sort((a, b) => a - b);
}

/**
 * Where a key moves the chart's cursor among `steps`: arrows one stop, Page keys a
 * tenth of the way, Home and End to the ends; null for a key that does not move it.
 * No cursor yet starts at the latest step (what the job is doing now).
 */
export function moveStep(steps: readonly number[], current: number | null, key: string): number | null {
  if (!steps.length) {
    return null;
  }
  const last = steps.length - 1;
  let at = current === null ? last : steps.findIndex(s => s >= current);
  if (at < 0) {
    at = last;
  }
  const page = Math.max(1, Math.round(steps.length / 10));
  const to: Record<string, number> = {
    ArrowLeft: at - 1,
    ArrowRight: at + 1,
    PageDown: at - page,
    PageUp: at + page,
    Home: 0,
    End: last
  };
  if (!(key in to)) {
    return null;
  }
  if (current === null) {
    return steps[last];
  }
  return steps[Math.min(last, Math.max(0, to[key]))];
}

/**
 * Series that trace exactly the line of an earlier one (DDP's ranks share the
 * all-reduced loss, so they often do): replica → the first replica with that line, and
 * its place among the copies (1, 2, …). Drawn on top of each other they would hide all
 * but the last, so the chart draws each copy dashed at its own phase and the legend
 * says whose line it repeats.
 */
export function repeatedLines(series: readonly ISeries[]): Map<string, { of: string; copy: number }> {
  const seen = new Map<string, { first: string; copies: number }>();
  const out = new Map<string, { of: string; copy: number }>();
  for (const s of series) {
    const key = JSON.stringify(s.segments);
    const earlier = seen.get(key);
    if (earlier) {
      earlier.copies += 1;
      out.set(s.replica, { of: earlier.first, copy: earlier.copies });
    } else if (s.segments.some(g => g.length)) {
      seen.set(key, { first: s.replica, copies: 0 });
    }
  }
  return out;
}
