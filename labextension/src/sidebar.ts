/**
 * The sidebar: every job the server reports, one row each: state (a glyph with its
 * word for screen readers), the full name (wrapped at its hyphens, never cut) as a
 * button that opens the job view, strategy, backend, notebook and a short cell id
 * (the full id in the tooltip), then ready replicas (or the end state), start time
 * and elapsed time, then the row's Cancel and Delete (each asks first, and is
 * disabled with its reason where it cannot run). The notebook name opens the
 * notebook at the job's cell. Above the list: a filter (words, state) and the sort; below it,
 * pages of PAGE_SIZE rows so hundreds of jobs stay quick. The list scrolls inside
 * the panel. One line per backend the server could not ask (a cluster that is down
 * hides no local job). The toolbar holds stock JupyterLab buttons.
 */
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { refreshIcon, SidePanel } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import { Panel, Widget } from '@lumino/widgets';

import { el, message, setMessage } from './dom';
import { JobsModel } from './model';
import { actionAllowed, JobAction } from './pure/actions';
import { basename, formatElapsed, plainWords, stateIcon } from './pure/format';
import { stateWord } from './pure/i18n';
import { filterJobs, formatStart, IJobFilter, NO_FILTER, page, shortCellId, SortKey, sortJobs } from './pure/jobs';
import { CommandIDs, IJobSummary } from './tokens';

const PAGE_SIZE = 50;
const STATES = ['active', 'Running', 'Pending', 'Restarting', 'Succeeded', 'Failed', 'Cancelled'];
function sorts(trans: TranslationBundle): [SortKey, string][] {
  return [
    ['start', trans.__('Newest')],
    ['name', trans.__('Name')],
    ['state', trans.__('State')]
  ];
}


function option(value: string, label: string): HTMLOptionElement {
  const o = el('option', '', label);
  o.value = value;
  return o;
}

export class JobsPanel extends SidePanel {
  constructor(
    private readonly _model: JobsModel,
    private readonly _commands: CommandRegistry,
    private readonly _t: TranslationBundle = nullTranslator.load('jupyter_ddl')
  ) {
    super({ content: new Panel() }); // one body: no accordion section around it
    this.addClass('jp-DDL-panel');
    this.id = 'jupyter-ddl-jobs';
    const trans = this._t;
    this.title.caption = trans.__('Distributed training jobs');
    const heading = new Widget({ node: el('h2', 'jp-DDL-panel-title', trans.__('Training jobs')) });
    this.header.addWidget(heading);
    // a plain button: the stock ToolbarButton's web component carries aria-pressed and
    // aria-disabled on an element without a role (axe-core: aria-allowed-attr, critical)
    const refresh = el('button', 'jp-DDL-refresh jp-ToolbarButtonComponent');
    refresh.title = trans.__('Refresh the job list');
    refresh.setAttribute('aria-label', trans.__('Refresh the job list'));
    refresh.appendChild(refreshIcon.element({ tag: 'span', elementSize: 'normal' }));
    refresh.onclick = () => void this._model.refresh();
    this.toolbar.addItem('refresh', new Widget({ node: refresh }));
    const body = new Widget();
    body.addClass('jp-DDL-panel-body');
    this._status.className = 'jp-DDL-panel-status';
    this._status.setAttribute('role', 'status');
    this._list.className = 'jp-DDL-joblist';
    this._list.setAttribute('aria-label', trans.__('Training jobs'));
    this._unavailable.className = 'jp-DDL-unavailable';
    body.node.append(this._status, this._unavailable, this._controls(), this._list, this._pager);
    this._pager.className = 'jp-DDL-pager';
    this.addWidget(body);
    this._model.changed.connect(this._render, this);
    this._render();
  }

  dispose(): void {
    clearInterval(this._ticker);
    super.dispose();
  }

  protected onAfterShow(): void {
    void this._model.refresh();
  }

  /** The filter and sort controls (native inputs: keyboard and screen readers for free). */
  private _controls(): HTMLElement {
    const trans = this._t;
    const bar = el('div', 'jp-DDL-controls');
    const text = (this._filterText = el('input', 'jp-DDL-filter-text jp-mod-styled'));
    text.type = 'search';
    text.placeholder = trans.__('Filter jobs');
    text.setAttribute('aria-label', trans.__('Filter jobs by name, notebook, strategy or backend'));
    text.oninput = () => this._update({ text: text.value });
    const state = el('select', 'jp-DDL-filter-state jp-mod-styled');
    state.setAttribute('aria-label', trans.__('Show jobs in state'));
    state.append(
      option('', trans.__('All states')),
      ...STATES.map(s => option(s, s === 'active' ? trans.__('Active') : stateWord(trans, s)))
    );
    state.onchange = () => this._update({ state: state.value });
    const sort = el('select', 'jp-DDL-sort jp-mod-styled');
    sort.setAttribute('aria-label', trans.__('Sort jobs by'));
    sort.append(...sorts(trans).map(([k, label]) => option(k, label)));
    sort.onchange = () => {
      this._sort = sort.value as SortKey;
      this._page = 0;
      this._render();
    };
    bar.append(text, state, sort);
    return bar;
  }

  private _update(change: Partial<IJobFilter>): void {
    this._filter = { ...this._filter, ...change };
    this._page = 0;
    this._render();
  }

  private _render(): void {
    const all = this._model.jobs;
    const shown = sortJobs(filterJobs(all, this._filter), this._sort);
    const current = page(shown, this._page, PAGE_SIZE);
    this._page = current.index;
    this.node.dataset.live = String(this._model.live);
    const down = this._model.unavailable.length;
    const trans = this._t;
    const empty = all.length
      ? trans.__('No job matches the filter.')
      : down
        ? down === 1
          ? trans.__('No jobs listed: a backend could not be asked (below).')
          : trans.__('No jobs listed: %1 backends could not be asked (below).', down)
        : trans.__('No jobs yet: run a %1 cell.', '%%distribute');
    setMessage(this._status, this._model.error ?? (shown.length ? '' : empty));
    this._status.classList.toggle('jp-DDL-error', !!this._model.error);
    this._list.hidden = !shown.length;
    // every render replaces the rows: the control that had the focus gets it back in its
    // row's new copy, so a keyboard user keeps their place while pushes arrive
    const active = document.activeElement;
    const activeRow = active instanceof HTMLElement && this._list.contains(active) ? active.closest<HTMLElement>('.jp-DDL-jobrow') : null;
    const keep = active instanceof HTMLElement && activeRow?.dataset.key ? { key: activeRow.dataset.key, cls: active.classList[0] } : null;
    this._list.replaceChildren(...current.items.map(job => this._row(job)));
    if (keep) {
      const row = this._list.querySelector<HTMLElement>(`[data-key="${CSS.escape(keep.key)}"]`);
      (row?.querySelector<HTMLElement>(`.${keep.cls}`) ?? row?.querySelector<HTMLElement>('.jp-DDL-open') ?? this._filterText).focus();
    }
    this._renderPager(current.index, current.pages, shown.length);
    this._unavailable.replaceChildren(
      ...this._model.unavailable.map(u => {
        // one flex item beside the warning mark, however many code spans it holds
        const line = el('li', 'jp-DDL-unavailable-line');
        line.append(message('span', '', u.message));
        line.dataset.backend = u.backend;
        return line;
      })
    );
    // running jobs' time counts on between pushes
    clearInterval(this._ticker);
    if (all.some(j => !j.finished && j.started)) {
      this._ticker = setInterval(() => this._tick(), 1000);
    }
  }

  private _renderPager(index: number, pages: number, total: number): void {
    this._pager.hidden = pages < 2;
    const from = index * PAGE_SIZE + 1;
    const to = Math.min(total, (index + 1) * PAGE_SIZE);
    const trans = this._t;
    const prev = el('button', 'jp-DDL-page-prev jp-mod-styled', trans.__('Previous'));
    prev.disabled = index === 0;
    prev.onclick = () => this._go(index - 1);
    const next = el('button', 'jp-DDL-page-next jp-mod-styled', trans.__('Next'));
    next.disabled = index >= pages - 1;
    next.onclick = () => this._go(index + 1);
    const where = el('span', 'jp-DDL-page-where', trans.__('%1–%2 of %3', from, to, total));
    where.setAttribute('aria-live', 'polite');
    this._pager.replaceChildren(prev, where, next);
  }

  private _go(index: number): void {
    this._page = index;
    this._render();
    this._list.parentElement?.scrollTo({ top: 0 });
  }

  private _tick(): void {
    if (!this.isVisible) {
      return;
    }
    for (const job of this._model.jobs) {
      const key = CSS.escape(`${job.backend}/${job.name}`);
      const cell = this._list.querySelector(`[data-key="${key}"] .jp-DDL-elapsed`);
      if (cell) {
        cell.textContent = formatElapsed(this._model.elapsed(job));
      }
    }
  }

  private _row(job: IJobSummary): HTMLElement {
    const trans = this._t;
    const word = stateWord(trans, job.state);
    const row = el('li', `jp-DDL-jobrow jp-DDL-state-${job.state.toLowerCase()}`);
    row.dataset.job = job.name;
    row.dataset.key = `${job.backend}/${job.name}`;
    row.dataset.state = job.state;
    row.title = [`${job.name} (${job.backend}): ${word}`, plainWords(job.message ?? '')].filter(Boolean).join('\n');

    const main = el('div', 'jp-DDL-jobcell');
    const title = el('div', 'jp-DDL-jobtitle');
    const icon = el('span', 'jp-DDL-state-icon', stateIcon(job.state));
    icon.setAttribute('role', 'img');
    icon.setAttribute('aria-label', word);
    const open = el('button', 'jp-DDL-open');
    open.append(el('span', 'jp-DDL-jobname', job.name));
    open.setAttribute('aria-label', trans.__('Open job %1, %2', job.name, word));
    open.onclick = event => {
      event.stopPropagation();
      this._open(job);
    };
    title.append(icon, open);
    main.append(title, el('div', 'jp-DDL-jobmeta', `${job.strategy} · ${job.backend}`));
    if (job.notebook || job.cell_id) {
      const source = el('div', 'jp-DDL-jobsource');
      if (job.notebook) {
        const nb = el('button', 'jp-DDL-notebook jp-DDL-link', basename(job.notebook));
        nb.title = job.cell_id
          ? trans.__('Open %1 at the cell this job came from', job.notebook)
          : trans.__('Open %1', job.notebook);
        nb.setAttribute('aria-label', trans.__('Open notebook %1 of job %2', basename(job.notebook), job.name));
        nb.onclick = event => {
          event.stopPropagation();
          void this._commands.execute(CommandIDs.openNotebook, { name: job.name, backend: job.backend });
        };
        source.appendChild(nb);
      }
      if (job.cell_id) {
        const cell = el('span', 'jp-DDL-cell', trans.__('cell %1', shortCellId(job.cell_id)));
        cell.title = trans.__('cell %1', job.cell_id);
        source.appendChild(cell);
      }
      main.appendChild(source);
    }

    const status = el('div', 'jp-DDL-status');
    const ready = job.finished ? word : trans.__('%1/%2 ready', job.ready, job.total);
    const replicas = el('div', 'jp-DDL-replicas-cell', ready);
    replicas.dataset.ready = String(job.ready);
    const start = el('div', 'jp-DDL-start', formatStart(job.started ?? job.created));
    if (job.started ?? job.created) {
      const when = new Date((job.started ?? job.created)! * 1000).toLocaleString();
      start.title = trans.__('started %1', when);
    }
    status.append(replicas, start, el('div', 'jp-DDL-elapsed', formatElapsed(this._model.elapsed(job))));
    status.appendChild(this._actions(job));
    row.append(main, status);
    row.onclick = () => this._open(job);
    return row;
  }

  /** The row's Cancel and Delete: buttons in the tab order, disabled with the reason. */
  private _actions(job: IJobSummary): HTMLElement {
    const trans = this._t;
    const bar = el('div', 'jp-DDL-rowactions');
    const pending = this._pending.has(`${job.backend}/${job.name}`);
    // each action's words whole, so that a translator sees the sentence
    const words = {
      cancel: {
        label: trans.__('Cancel'),
        pending: trans.__('Cancel of %1 is under way', job.name),
        ask: trans.__('Cancel %1…', job.name),
        aria: trans.__('Cancel job %1', job.name)
      },
      delete: {
        label: trans.__('Delete'),
        pending: trans.__('Delete of %1 is under way', job.name),
        ask: trans.__('Delete %1…', job.name),
        aria: trans.__('Delete job %1', job.name)
      }
    };
    const button = (action: JobAction, command: string) => {
      const said = words[action];
      const b = el('button', `jp-DDL-row-${action} jp-mod-styled`, said.label);
      const allowed = actionAllowed(action, job, trans);
      b.disabled = pending || !allowed.ok;
      b.title = pending ? said.pending : allowed.ok ? said.ask : allowed.why;
      b.setAttribute('aria-label', said.aria);
      b.onclick = event => {
        event.stopPropagation();
        const key = `${job.backend}/${job.name}`;
        this._pending.add(key);
        b.disabled = true; // in place: a re-render now would take the focus the dialog gives back
        void this._commands.execute(command, { name: job.name, backend: job.backend }).finally(() => {
          this._pending.delete(key);
          this._render();
          this._refocus(key, `jp-DDL-row-${action}`);
          // the dialog hands the focus back to the button it opened from (disabled, or
          // replaced by a push meanwhile), and the shell then gives it to the main area
          // a moment later: the row's control takes it back once that has settled
          for (const ms of [50, 250]) {
            setTimeout(() => {
              if (!this.node.contains(document.activeElement)) {
                this._refocus(key, `jp-DDL-row-${action}`);
              }
            }, ms);
          }
        });
      };
      return b;
    };
    bar.append(button('cancel', CommandIDs.cancelJob), button('delete', CommandIDs.deleteJob));
    return bar;
  }

  /**
   * After an action's dialog: the focus back on the row's control, else on the row's
   * name (the action was refused or is under way), else, the row gone, on the filter.
   */
  private _refocus(key: string, cls: string): void {
    const row = this._list.querySelector<HTMLElement>(`[data-key="${CSS.escape(key)}"]`);
    const same = row?.querySelector<HTMLButtonElement>(`.${cls}`);
    const target = same && !same.disabled ? same : (row?.querySelector<HTMLElement>('.jp-DDL-open') ?? this._filterText);
    target.focus();
  }

  private _open(job: IJobSummary): void {
    void this._commands.execute(CommandIDs.openJob, { name: job.name });
  }

  private _status = el('div');
  private _unavailable = el('ul');
  private _list = el('ul');
  private _pager = el('div');
  private _filter: IJobFilter = NO_FILTER;
  private _sort: SortKey = 'start';
  private _page = 0;
  /** rows whose action runs (its dialog is open or its request under way) */
  private _pending = new Set<string>();
  private _filterText!: HTMLInputElement;
  private _ticker: ReturnType<typeof setInterval> | undefined = undefined;
}
