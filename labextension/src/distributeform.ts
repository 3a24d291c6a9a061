/**
 * The "Distribute this cell" dialog and its command. The dialog asks for framework,
 * strategy, replicas (total, as `--replicas`), GPUs per replica, backend and more
 * flags, and shows the magic line they make as it changes. Everything it offers
 * comes from the server: the strategy catalog (GET /strategies) and what each
 * backend runs (GET /backends).
 */
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { applyDistribute, sourcesUpTo } from './distribute';
import { el } from './dom';
import { cellBody, countProblem, flagsFor, IChoice, parseFlags, suggestStrategy } from './pure/flags';
import { plainWords } from './pure/format';
import { requestAPI } from './request';
import { IBackends, ICatalog, IStrategy } from './tokens';

export interface IFormOptions {
  catalog: ICatalog;
  backends: IBackends;
  /** the strategy the notebook's imports suggest, or null */
  suggested: string | null;
  /** fields of a `%%distribute` line already on the cell, and the settings' defaults */
  initial: Partial<IChoice>;
  /** the user's language (JupyterLab's translator; English without one) */
  trans?: TranslationBundle;
}

export class DistributeForm extends Widget implements Dialog.IBodyWidget<string | null> {
  constructor(private readonly _o: IFormOptions) {
    super();
    const trans = _o.trans ?? nullTranslator.load('jupyter_ddl');
    this._trans = trans;
    this.addClass('jp-DDL-form');
    const defaultBackend = _o.backends.default;
    const usable = _o.backends.backends.filter(b => b.available);
    for (const b of _o.backends.backends) {
      const option = el('option', '', b.available ? b.name : trans.__('%1 (unavailable)', b.name));
      option.value = b.name;
      option.disabled = !b.available;
      option.title = plainWords(b.error ?? '');
      this._backend.appendChild(option);
    }
    const initialBackend =
      usable.find(b => b.name === _o.initial.backend) ?? usable.find(b => b.default) ?? usable[0];
    this._backend.value = initialBackend?.name ?? defaultBackend;

    for (const f of _o.catalog.frameworks) {
      const option = el('option', '', f.title);
      option.value = f.name;
      this._framework.appendChild(option);
    }
    const start = this._byName(_o.initial.strategy ?? '') ?? this._byName(_o.suggested ?? '');
    this._framework.value = start?.framework ?? _o.catalog.frameworks[0].name;
    this._fillStrategies(start?.name);
    this._replicas.type = this._gpus.type = 'number';
    this._problem.setAttribute('aria-live', 'polite');
    this._gpus.min = '0';
    this._replicas.value = String(_o.initial.replicas ?? this._strategy()?.replicas.default ?? 1);
    this._gpus.value = String(_o.initial.gpus ?? 0);
    this._extra.value = _o.initial.extra ?? '';
    this._extra.placeholder = trans.__('e.g. %1', '--wait --name my-job');

    const hint = _o.suggested
      ? trans.__("Proposed from the notebook's imports: %1.", this._byName(_o.suggested)?.title ?? _o.suggested)
      : trans.__('No framework import found in this notebook: pick one.');
    this.node.append(
      el('p', 'jp-DDL-form-hint', hint),
      this._field(trans.__('Framework'), this._framework),
      this._field(trans.__('Strategy'), this._strategySelect),
      this._summary,
      this._field(trans.__('Replicas (total)'), this._replicas),
      this._field(trans.__('GPUs per replica'), this._gpus),
      this._problem,
      this._field(trans.__('Backend'), this._backend),
      this._field(trans.__('More flags'), this._extra),
      this._preview
    );
    this._framework.onchange = () => {
      this._fillStrategies();
      this._replicas.value = String(this._strategy()?.replicas.default ?? 1);
      this._update();
    };
    this._strategySelect.onchange = () => {
      this._replicas.value = String(this._strategy()?.replicas.default ?? 1);
      this._update();
    };
    this._backend.onchange = () => {
      this._fillStrategies(this._strategySelect.value);
      this._update();
    };
    for (const input of [this._replicas, this._gpus, this._extra]) {
      input.oninput = () => this._update();
    }
    this._update();
  }

  /** The flags to write after `%%distribute`; null while a count is out of range. */
  getValue(): string | null {
    return this.problem ? null : flagsFor(this._choice(), this._o.backends.default);
  }

  /** What is wrong with the counts typed, in one line, or '' when nothing is. */
  get problem(): string {
    return this._problems().filter(Boolean).join(' ');
  }

  /** The replicas' problem and the GPUs', each null when that count is in range. */
  private _problems(): [string | null, string | null] {
    const s = this._strategy();
    const replicas = s ? s.replicas : { min: 1, max: null };
    const trans = this._trans;
    return [
      countProblem(trans.__('Replicas (total)'), this._replicas.value, replicas.min, replicas.max, trans),
      this._gpus.disabled ? null : countProblem(trans.__('GPUs per replica'), this._gpus.value, 0, null, trans)
    ];
  }

  private _choice(): IChoice {
    return {
      strategy: this._strategySelect.value,
      replicas: Number(this._replicas.value),
      gpus: this._gpus.disabled ? 0 : Number(this._gpus.value),
      backend: this._backend.value,
      extra: this._extra.value
    };
  }

  private _byName(name: string): IStrategy | undefined {
    return this._o.catalog.strategies.find(s => s.name === name);
  }

  private _strategy(): IStrategy | undefined {
    return this._byName(this._strategySelect.value);
  }

  /** The chosen framework's strategies that the chosen backend runs. */
  private _fillStrategies(keep?: string): void {
    const backend = this._o.backends.backends.find(b => b.name === this._backend.value);
    const runs = backend?.capabilities?.strategies;
    const offered = this._o.catalog.strategies.filter(
      s => s.framework === this._framework.value && (!runs || runs.includes(s.name))
    );
    this._strategySelect.replaceChildren(
      ...offered.map(s => {
        const option = el('option', '', `${s.name} · ${s.title}`);
        option.value = s.name;
        return option;
      })
    );
    if (keep && offered.some(s => s.name === keep)) {
      this._strategySelect.value = keep;
    }
  }

  private _update(): void {
    const s = this._strategy();
    if (s) {
      this._replicas.min = String(s.replicas.min);
      this._replicas.max = s.replicas.max === null ? '' : String(s.replicas.max);
      this._replicas.disabled = s.replicas.min === s.replicas.max;
      if (this._replicas.disabled) {
        this._replicas.value = String(s.replicas.min);
      }
      this._gpus.disabled = !s.gpus;
      this._summary.textContent = s.summary;
    }
    const [replicasProblem, gpusProblem] = this._problems();
    const problem = this.problem;
    this._problem.textContent = problem;
    this._problem.hidden = !problem;
    this._replicas.setAttribute('aria-invalid', String(!!replicasProblem));
    this._gpus.setAttribute('aria-invalid', String(!!gpusProblem));
    this._preview.textContent = problem
      ? this._trans.__('Nothing to insert until the counts are in range.')
      : `%%distribute ${this.getValue()}`; // i18n: code, the same in every language
    // the dialog's Insert button, once the form is in it
    const accept = this.node.closest('.jp-Dialog-content')?.querySelector<HTMLButtonElement>('.jp-mod-accept');
    if (accept) {
      accept.disabled = !!problem;
    }
  }

  protected onAfterAttach(): void {
    this._update();
  }

  private _field(label: string, input: HTMLElement): HTMLElement {
    const row = el('label', 'jp-DDL-form-row');
    row.append(el('span', 'jp-DDL-form-label', label), input);
    return row;
  }

  private _framework = el('select', 'jp-mod-styled jp-DDL-framework');
  private _strategySelect = el('select', 'jp-mod-styled jp-DDL-strategy');
  private _replicas = el('input', 'jp-mod-styled jp-DDL-replicas-input');
  private _gpus = el('input', 'jp-mod-styled jp-DDL-gpus');
  private _backend = el('select', 'jp-mod-styled jp-DDL-backend');
  private _extra = el('input', 'jp-mod-styled jp-DDL-extra');
  private _summary = el('p', 'jp-DDL-muted jp-DDL-form-summary');
  private _preview = el('pre', 'jp-DDL-form-preview');
  private _problem = el('p', 'jp-DDL-form-problem jp-DDL-error');
  private readonly _trans: TranslationBundle;
}

/**
 * The command: ask for the active code cell's flags in the dialog, then write them.
 * An empty cell gets a message instead; a failed request its one-line reason.
 */
export async function distributeActiveCell(
  notebooks: INotebookTracker,
  settings: { defaultBackend: string; extraFlags: string },
  trans: TranslationBundle = nullTranslator.load('jupyter_ddl')
): Promise<boolean> {
  const panel = notebooks.currentWidget;
  const cell = panel?.content.activeCell?.model;
  if (!panel || !cell || cell.type !== 'code') {
    return false;
  }
  const source = cell.sharedModel.getSource();
  if (!cellBody(source).trim()) {
    await showDialog({
      title: trans.__('Nothing to distribute'),
      body: trans.__('This cell is empty: write the training code in it first, then choose "Distribute this cell".'),
      buttons: [Dialog.okButton({ label: trans.__('OK') })]
    });
    return false;
  }
  let catalog: ICatalog;
  let backends: IBackends;
  try {
    [catalog, backends] = await Promise.all([
      requestAPI<ICatalog>('strategies'),
      requestAPI<IBackends>('backends')
    ]);
  } catch (error) {
    await showErrorMessage(
      trans.__('Distribute this cell'),
      trans.__('The server did not answer: %1', plainWords((error as Error).message))
    );
    return false;
  }
  const existing = parseFlags(source);
  const form = new DistributeForm({
    catalog,
    backends,
    suggested: suggestStrategy(catalog, sourcesUpTo(panel, cell)),
    trans,
    initial: {
      backend: settings.defaultBackend || undefined,
      extra: settings.extraFlags,
      ...existing
    }
  });
  const result = await showDialog({
    title: trans.__('Distribute this cell'),
    body: form,
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.okButton({ label: trans.__('Insert %1', '%%distribute') })
    ],
    focusNodeSelector: '.jp-DDL-strategy'
  });
  if (!result.button.accept) {
    return false;
  }
  if (result.value === null) {
    // Enter pressed while a count was out of range: say so, write nothing
    await showErrorMessage(trans.__('Distribute this cell'), form.problem);
    return false;
  }
  applyDistribute(panel, cell, result.value);
  return true;
}
