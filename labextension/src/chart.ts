/**
 * The metrics chart: one SVG polyline per metric over steps, each scaled to its
 * own range (loss and accuracy differ by orders of magnitude), with a legend that
 * shows the latest value. No chart library: a few dozen lines do it.
 */
import { Widget } from '@lumino/widgets';

import { el, formatNumber } from './format';
import { IMetricPoint } from './tokens';

const W = 480;
const H = 160;
const PAD = 8;
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'];
const SVG = 'http://www.w3.org/2000/svg';

/** metric name → [step, value] pairs, in step order. */
export function toSeries(points: IMetricPoint[]): Map<string, [number, number][]> {
  const series = new Map<string, [number, number][]>();
  for (const p of points) {
    for (const [key, value] of Object.entries(p.values)) {
      if (!series.has(key)) {
        series.set(key, []);
      }
      series.get(key)!.push([p.step, value]);
    }
  }
  series.forEach(s => s.sort((a, b) => a[0] - b[0]));
  return series;
}

export class MetricsChart extends Widget {
  constructor() {
    super();
    this.addClass('jp-DDL-chart');
  }

  setPoints(points: IMetricPoint[]): void {
    const series = toSeries(points);
    this.node.dataset.points = String(points.length);
    if (!series.size) {
      this.node.replaceChildren(el('div', 'jp-DDL-muted', 'No metrics reported yet.'));
      return;
    }
    const steps = points.map(p => p.step);
    const x0 = Math.min(...steps);
    const x1 = Math.max(...steps, x0 + 1);
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    svg.setAttribute('class', 'jp-DDL-chart-svg');
    // stretch to the box: x is steps, y each metric's own range
    svg.setAttribute('preserveAspectRatio', 'none');
    const legend = el('div', 'jp-DDL-legend');
    let i = 0;
    series.forEach((pts, name) => {
      const color = COLORS[i++ % COLORS.length];
      const ys = pts.map(p => p[1]).filter(v => isFinite(v));
      const y0 = Math.min(...ys);
      const y1 = Math.max(...ys, y0 + 1e-12);
      const coords = pts
        .filter(p => isFinite(p[1]))
        .map(([x, y]) => {
          const px = PAD + ((x - x0) / (x1 - x0)) * (W - 2 * PAD);
          const py = H - PAD - ((y - y0) / (y1 - y0)) * (H - 2 * PAD);
          return `${px.toFixed(1)},${py.toFixed(1)}`;
        });
      const line = document.createElementNS(SVG, 'polyline');
      line.setAttribute('points', coords.join(' '));
      line.setAttribute('fill', 'none');
      line.setAttribute('stroke', color);
      line.setAttribute('stroke-width', '1.5');
      line.setAttribute('vector-effect', 'non-scaling-stroke');
      line.dataset.metric = name;
      svg.appendChild(line);
      const latest = pts[pts.length - 1][1];
      const item = el('span', 'jp-DDL-legend-item', `${name} ${formatNumber(latest)}`);
      item.style.color = color;
      legend.appendChild(item);
    });
    const axis = el('div', 'jp-DDL-muted', `steps ${x0}–${Math.max(...steps)}`);
    this.node.replaceChildren(legend, svg, axis);
  }
}
