/**
 * The metrics charts of the job view: one SVG chart per metric (and source), one
 * line per replica with a legend, axis values, a log axis when the values span
 * decades (with a toggle), and restarts drawn as gaps. Each step's values show on
 * hover and by keyboard (the plot takes focus; arrows, Page keys, Home and End move a
 * cursor); legend entries are toggle buttons that hide a replica's line. The cursor,
 * the hidden replicas and the focus survive the refreshes that redraw the charts.
 * Colours are JupyterLab's theme variables (style/base.css), so dark themes work.
 */
import { Widget } from '@lumino/widgets';

import { el } from './dom';
import { formatNumber } from './pure/format';
import { english, ITrans } from './pure/i18n';
import {
  IAxis,
  IChartData,
  ISeries,
  linearAxis,
  moveStep,
  position,
  prefersLog,
  repeatedLines,
  tickLabel,
  stepsOf,
  values,
  valuesAt,
  yAxis
} from './pure/series';

const W = 600;
const H = 210;
const M = { left: 58, right: 14, top: 10, bottom: 30 };
const PLOT_W = W - M.left - M.right;
const PLOT_H = H - M.top - M.bottom;
const SVG = 'http://www.w3.org/2000/svg';
/** Series colour classes in style/base.css (then they repeat, dashed). */
const COLOURS = 8;

/** Where a chart's values came from, said under its title (none for `report`). */
function sourceNote(source: string, trans: ITrans): string {
  return source === 'keras'
    ? trans.__('from the Keras progress bar')
    : source === 'log'
      ? trans.__('from printed lines')
      : '';
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  cls?: string
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, String(v));
  }
  if (cls) {
    node.setAttribute('class', cls);
  }
  return node;
}

function seriesClass(s: ISeries): string {
  const dashed = s.colour >= COLOURS ? ' jp-DDL-dashed' : '';
  return `jp-DDL-series-${s.colour % COLOURS}${dashed}`;
}

export class MetricsChart extends Widget {
  constructor(private readonly _trans: ITrans = english) {
    super();
    this.addClass('jp-DDL-charts');
  }

  setCharts(charts: IChartData[]): void {
    this._charts = charts;
    this.node.dataset.charts = String(charts.length);
    // the control with the focus is redrawn too: give it back afterwards
    const active = document.activeElement as HTMLElement | null;
    const focused = active && this.node.contains(active) ? active.dataset.focus : undefined;
    if (!charts.length) {
      this.node.replaceChildren(el('div', 'jp-DDL-muted', this._trans.__('No metrics reported yet.')));
      return;
    }
    this._shows = [];
    // removing the focused plot may blur it (which clears its cursor): keep them all
    const cursors = new Map(this._cursor);
    this.node.replaceChildren(...charts.map(c => this._chart(c)));
    this._cursor = cursors;
    for (const show of this._shows) {
      show();
    }
    if (focused) {
      this.node.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focused)}"]`)?.focus();
    }
  }

  private _chart(chart: IChartData): HTMLElement {
    const trans = this._trans;
    const hidden = this._hidden.get(chart.key) ?? new Set<string>();
    const shown = chart.series.filter(s => !hidden.has(s.replica));
    const vals = values(shown.length ? shown : chart.series);
    const log = this._scale.get(chart.key) ?? prefersLog(vals);
    const box = el('div', 'jp-DDL-chartbox');
    box.dataset.metric = chart.metric;
    box.dataset.source = chart.source;
    box.dataset.scale = log ? 'log' : 'linear';
    box.appendChild(this._header(chart, log));
    const y = yAxis(vals, log);
    const steps = chart.series.flatMap(s => s.segments.flatMap(g => g.map(p => p[0])));
    const x = linearAxis(Math.min(...steps), Math.max(...steps), 6, true);
    const plot = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img' }, 'jp-DDL-chart-svg');
    plot.setAttribute('aria-label', trans.__('%1 by step, one line per replica', chart.metric));
    plot.appendChild(svg('rect', { x: M.left, y: M.top, width: PLOT_W, height: PLOT_H }, 'jp-DDL-plot-bg'));
    this._axes(plot, x, y);
    const repeats = repeatedLines(shown);
    for (const s of shown) {
      this._line(plot, s, x, y, repeats);
    }
    // the focus target: the plot is an image, the values come as the tooltip's text
    const frame = el('div', 'jp-DDL-chart-frame');
    frame.tabIndex = 0;
    frame.dataset.focus = `${chart.key}|plot`;
    frame.setAttribute('role', 'group');
    frame.setAttribute(
      'aria-label',
      trans.__('%1 chart: arrow keys, Home and End show the values at each step', chart.metric)
    );
    frame.appendChild(plot);
    box.appendChild(frame);
    box.appendChild(this._legend(chart, hidden));
    this._hover(box, frame, plot, { ...chart, series: shown }, x, y);
    return box;
  }

  private _header(chart: IChartData, log: boolean): HTMLElement {
    const head = el('div', 'jp-DDL-chart-head');
    head.appendChild(el('span', 'jp-DDL-chart-title', chart.metric));
    const note = sourceNote(chart.source, this._trans);
    if (note) {
      head.appendChild(el('span', 'jp-DDL-muted', note));
    }
    const toggle = el('label', 'jp-DDL-scale');
    const box = el('input');
    box.type = 'checkbox';
    box.checked = log;
    box.onchange = () => {
      this._scale.set(chart.key, box.checked);
      this.setCharts(this._charts);
    };
    toggle.append(box, document.createTextNode(' ' + this._trans.__('log scale')));
    head.appendChild(toggle);
    return head;
  }

  private _axes(plot: SVGSVGElement, x: IAxis, y: IAxis): void {
    for (const t of y.ticks) {
      const py = M.top + PLOT_H * (1 - position(y, t));
      plot.appendChild(svg('line', { x1: M.left, x2: M.left + PLOT_W, y1: py, y2: py }, 'jp-DDL-grid'));
      const label = svg('text', { x: M.left - 6, y: py + 4, 'text-anchor': 'end' }, 'jp-DDL-tick');
      label.textContent = tickLabel(t, y.log);
      plot.appendChild(label);
    }
    for (const t of x.ticks) {
      const px = M.left + PLOT_W * position(x, t);
      plot.appendChild(svg('line', { x1: px, x2: px, y1: M.top, y2: M.top + PLOT_H }, 'jp-DDL-grid'));
      const label = svg('text', { x: px, y: H - M.bottom + 16, 'text-anchor': 'middle' }, 'jp-DDL-tick');
      label.textContent = tickLabel(t, false);
      plot.appendChild(label);
    }
    const name = svg('text', { x: M.left + PLOT_W, y: H - 2, 'text-anchor': 'end' }, 'jp-DDL-tick');
    name.textContent = this._trans.__('step');
    plot.appendChild(name);
  }

  private _line(plot: SVGSVGElement, s: ISeries, x: IAxis, y: IAxis, repeats: ReturnType<typeof repeatedLines>): void {
    // a copy of an earlier line: dashed at a phase of its own, so every copy shows
    const copy = repeats.get(s.replica);
    const copies = copy ? [...repeats.values()].filter(r => r.of === copy.of).length : 0;
    const dash: Record<string, string | number> = copy
      ? { 'stroke-dasharray': `6 ${6 * copies}`, 'stroke-dashoffset': 6 * copy.copy }
      : {};
    s.segments.forEach((segment, i) => {
      // a point a log axis cannot show (zero) splits the line as a gap does
      const runs: string[][] = [[]];
      for (const [step, value] of segment) {
        const py = position(y, value);
        if (Number.isNaN(py)) {
          runs.push([]);
          continue;
        }
        const px = M.left + PLOT_W * position(x, step);
        runs[runs.length - 1].push(`${px.toFixed(1)},${(M.top + PLOT_H * (1 - py)).toFixed(1)}`);
      }
      // earlier attempts fainter: the latest one is what the job is doing now
      const cls = `${seriesClass(s)}${i < s.segments.length - 1 ? ' jp-DDL-earlier' : ''}`;
      for (const run of runs.filter(r => r.length)) {
        const attrs = { 'data-replica': s.replica, 'data-segment': i, ...dash };
        const [cx, cy] = run[0].split(',');
        plot.appendChild(
          run.length > 1
            ? svg('polyline', { ...attrs, points: run.join(' ') }, `jp-DDL-line ${cls}`)
            : svg('circle', { ...attrs, cx, cy, r: 2 }, `jp-DDL-dot ${cls}`)
        );
      }
    });
  }

  /** One toggle button per replica: pressed while its line is drawn. */
  private _legend(chart: IChartData, hidden: Set<string>): HTMLElement {
    const trans = this._trans;
    const legend = el('div', 'jp-DDL-legend');
    legend.setAttribute('role', 'group');
    legend.setAttribute('aria-label', trans.__('%1: replicas drawn', chart.metric));
    const repeats = repeatedLines(chart.series);
    for (const s of chart.series) {
      const item = el('button', `jp-DDL-legend-item ${seriesClass(s)}`);
      item.dataset.replica = s.replica;
      item.dataset.focus = `${chart.key}|legend|${s.replica}`;
      const on = !hidden.has(s.replica);
      item.setAttribute('aria-pressed', String(on));
      item.title = on ? trans.__('Hide %1 in this chart', s.replica) : trans.__('Show %1 in this chart', s.replica);
      item.appendChild(el('span', 'jp-DDL-swatch'));
      const restarts = s.segments.length > 1 ? ' ' + trans.__('(%1 attempts)', s.segments.length) : '';
      const of = repeats.get(s.replica)?.of;
      const same = of ? ' ' + trans.__('(the same line as %1)', of) : '';
      item.appendChild(el('span', '', `${s.replica} ${formatNumber(s.latest)}${restarts}${same}`));
      item.onclick = () => {
        const next = new Set(hidden);
        if (on) {
          next.add(s.replica);
        } else {
          next.delete(s.replica);
        }
        this._hidden.set(chart.key, next);
        this.setCharts(this._charts);
      };
      legend.appendChild(item);
    }
    return legend;
  }

  /**
   * A guide line and each shown replica's value at one step: the step under the
   * pointer, or the keyboard cursor's while the plot has the focus. The step is kept
   * (`_cursor`) so a redraw shows it again.
   */
  private _hover(box: HTMLElement, frame: HTMLElement, plot: SVGSVGElement, chart: IChartData, x: IAxis, y: IAxis): void {
    const trans = this._trans;
    const guide = svg('line', { y1: M.top, y2: M.top + PLOT_H, x1: 0, x2: 0 }, 'jp-DDL-guide');
    const dots = svg('g', {});
    const tip = el('div', 'jp-DDL-tooltip');
    tip.setAttribute('aria-live', 'polite'); // read out as the keyboard cursor moves
    const area = svg('rect', { x: M.left, y: M.top, width: PLOT_W, height: PLOT_H, fill: 'transparent' });
    plot.append(guide, dots, area);
    box.appendChild(tip);
    const hide = () => {
      this._cursor.delete(chart.key);
      box.classList.remove('jp-mod-hover');
      tip.replaceChildren();
    };
    const show = (step: number) => {
      const near = valuesAt(chart.series, step);
      if (!near.length) {
        return hide();
      }
      const at = near[0].point[0];
      this._cursor.set(chart.key, at);
      const gx = M.left + PLOT_W * position(x, at);
      guide.setAttribute('x1', String(gx));
      guide.setAttribute('x2', String(gx));
      dots.replaceChildren(
        ...near
          .filter(n => !Number.isNaN(position(y, n.point[1])))
          .map(n =>
            svg(
              'circle',
              { cx: M.left + PLOT_W * position(x, n.point[0]), cy: M.top + PLOT_H * (1 - position(y, n.point[1])), r: 3 },
              `jp-DDL-dot ${seriesClass(n.series)}`
            )
          )
      );
      tip.replaceChildren(
        el('div', 'jp-DDL-tooltip-head', trans.__('%1 at step %2', chart.metric, at)),
        ...near.map(n => {
          const row = el('div', seriesClass(n.series));
          const [step, value] = n.point;
          const text = `${n.series.replica}: ${formatNumber(value)}${step === at ? '' : ' ' + trans.__('(step %1)', step)}`;
          row.append(el('span', 'jp-DDL-swatch'), el('span', '', text));
          return row;
        })
      );
      const width = plot.getBoundingClientRect().width || W;
      tip.style.left = `${Math.max(0, Math.min((gx / W) * width + 12, width - 180))}px`;
      box.classList.add('jp-mod-hover');
    };
    area.addEventListener('pointerleave', () => document.activeElement !== frame && hide());
    area.addEventListener('pointermove', event => {
      const rect = plot.getBoundingClientRect();
      const fx = ((event.clientX - rect.left) / rect.width) * W;
      show(x.lo + ((fx - M.left) / PLOT_W) * (x.hi - x.lo));
    });
    frame.addEventListener('focus', () => show(this._cursor.get(chart.key) ?? x.hi));
    frame.addEventListener('blur', hide);
    frame.addEventListener('keydown', event => {
      const to = moveStep(stepsOf(chart.series), this._cursor.get(chart.key) ?? null, event.key);
      if (to !== null) {
        event.preventDefault();
        show(to);
      } else if (event.key === 'Escape') {
        hide();
      }
    });
    this._shows.push(() => {
      const kept = this._cursor.get(chart.key);
      if (kept !== undefined && frame.isConnected) {
        show(kept);
      }
    });
  }

  private _charts: IChartData[] = [];
  /** the step each chart's tooltip shows (by chart key); replicas hidden per chart */
  private _cursor = new Map<string, number>();
  private _hidden = new Map<string, Set<string>>();
  private _shows: (() => void)[] = [];
  private _scale = new Map<string, boolean>();
}
