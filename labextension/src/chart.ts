/**
 * The metrics charts of the job view: one SVG chart per metric (and source), one
 * line per replica with a legend, axis values, a log axis when the values span
 * decades (with a toggle), hover values, and restarts drawn as gaps. Colours are
 * JupyterLab's theme variables (style/base.css), so dark themes work.
 */
import { Widget } from '@lumino/widgets';

import { el } from './dom';
import { formatNumber } from './pure/format';
import {
  IAxis,
  IChartData,
  ISeries,
  linearAxis,
  position,
  prefersLog,
  tickLabel,
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
const COLOURS = 6;

const SOURCE_NOTE: Record<string, string> = {
  report: '',
  keras: 'from the Keras progress bar',
  log: 'from printed lines'
};

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
  constructor() {
    super();
    this.addClass('jp-DDL-charts');
  }

  setCharts(charts: IChartData[]): void {
    this._charts = charts;
    this.node.dataset.charts = String(charts.length);
    if (!charts.length) {
      this.node.replaceChildren(el('div', 'jp-DDL-muted', 'No metrics reported yet.'));
      return;
    }
    this.node.replaceChildren(...charts.map(c => this._chart(c)));
  }

  private _chart(chart: IChartData): HTMLElement {
    const vals = values(chart.series);
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
    plot.setAttribute('aria-label', `${chart.metric} by step, one line per replica`);
    plot.appendChild(svg('rect', { x: M.left, y: M.top, width: PLOT_W, height: PLOT_H }, 'jp-DDL-plot-bg'));
    this._axes(plot, x, y);
    for (const s of chart.series) {
      this._line(plot, s, x, y);
    }
    box.appendChild(plot);
    box.appendChild(this._legend(chart.series));
    this._hover(box, plot, chart, x, y);
    return box;
  }

  private _header(chart: IChartData, log: boolean): HTMLElement {
    const head = el('div', 'jp-DDL-chart-head');
    head.appendChild(el('span', 'jp-DDL-chart-title', chart.metric));
    const note = SOURCE_NOTE[chart.source];
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
    toggle.append(box, document.createTextNode(' log scale'));
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
    name.textContent = 'step';
    plot.appendChild(name);
  }

  private _line(plot: SVGSVGElement, s: ISeries, x: IAxis, y: IAxis): void {
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
        const attrs = { 'data-replica': s.replica, 'data-segment': i };
        const [cx, cy] = run[0].split(',');
        plot.appendChild(
          run.length > 1
            ? svg('polyline', { ...attrs, points: run.join(' ') }, `jp-DDL-line ${cls}`)
            : svg('circle', { ...attrs, cx, cy, r: 2 }, `jp-DDL-dot ${cls}`)
        );
      }
    });
  }

  private _legend(series: ISeries[]): HTMLElement {
    const legend = el('div', 'jp-DDL-legend');
    for (const s of series) {
      const item = el('span', `jp-DDL-legend-item ${seriesClass(s)}`);
      item.dataset.replica = s.replica;
      item.appendChild(el('span', 'jp-DDL-swatch'));
      const restarts = s.segments.length > 1 ? ` (${s.segments.length} attempts)` : '';
      item.appendChild(el('span', '', `${s.replica} ${formatNumber(s.latest)}${restarts}`));
      legend.appendChild(item);
    }
    return legend;
  }

  /** A guide line and each replica's value at the step under the pointer. */
  private _hover(box: HTMLElement, plot: SVGSVGElement, chart: IChartData, x: IAxis, y: IAxis): void {
    const guide = svg('line', { y1: M.top, y2: M.top + PLOT_H, x1: 0, x2: 0 }, 'jp-DDL-guide');
    const dots = svg('g', {});
    const tip = el('div', 'jp-DDL-tooltip');
    const area = svg('rect', { x: M.left, y: M.top, width: PLOT_W, height: PLOT_H, fill: 'transparent' });
    plot.append(guide, dots, area);
    box.appendChild(tip);
    const hide = () => {
      box.classList.remove('jp-mod-hover');
    };
    area.addEventListener('pointerleave', hide);
    area.addEventListener('pointermove', event => {
      const rect = plot.getBoundingClientRect();
      const fx = ((event.clientX - rect.left) / rect.width) * W;
      const step = x.lo + ((fx - M.left) / PLOT_W) * (x.hi - x.lo);
      const near = valuesAt(chart.series, step);
      if (!near.length) {
        return hide();
      }
      const at = near[0].point[0];
      const gx = M.left + PLOT_W * position(x, at);
      guide.setAttribute('x1', String(gx));
      guide.setAttribute('x2', String(gx));
      dots.replaceChildren(
        ...near
          .filter(n => !Number.isNaN(position(y, n.point[1])))
          .map(n =>
            svg(
              'circle',
              {
                cx: M.left + PLOT_W * position(x, n.point[0]),
                cy: M.top + PLOT_H * (1 - position(y, n.point[1])),
                r: 3
              },
              `jp-DDL-dot ${seriesClass(n.series)}`
            )
          )
      );
      tip.replaceChildren(
        el('div', 'jp-DDL-tooltip-head', `step ${at}`),
        ...near.map(n => {
          const row = el('div', seriesClass(n.series));
          const [step, value] = n.point;
          const text = `${n.series.replica}: ${formatNumber(value)} (step ${step})`;
          row.append(el('span', 'jp-DDL-swatch'), el('span', '', text));
          return row;
        })
      );
      const left = ((gx / W) * rect.width) + 12;
      tip.style.left = `${Math.min(left, rect.width - 180)}px`;
      box.classList.add('jp-mod-hover');
    });
  }

  private _charts: IChartData[] = [];
  private _scale = new Map<string, boolean>();
}
