/**
 * "Distribute this cell": put `%%distribute` on top of the active code cell, and
 * `%load_ext jupyter_ddl` at the top of the notebook if no cell loads it yet.
 */
import { INotebookTracker } from '@jupyterlab/notebook';

export const LOAD_EXT = '%load_ext jupyter_ddl';

/** The cell source with the magic line on top; unchanged if it has one already. */
export function withDistribute(source: string, flags: string): string {
  if (source.trimStart().startsWith('%%distribute')) {
    return source;
  }
  const magic = `%%distribute ${flags}`.trimEnd();
  return `${magic}\n${source}`;
}

/** Whether some cell already loads the extension. */
export function loadsExtension(sources: string[]): boolean {
  return sources.some(s => /^\s*%(load_ext|reload_ext)\s+jupyter_ddl\b/m.test(s));
}

/** The magic's flags from the settings (`--backend` from the default backend). */
export function distributeFlags(defaultFlags: string, defaultBackend: string): string {
  const backend =
    defaultBackend && !/(^|\s)(--backend|-b)\b/.test(defaultFlags) ? ` --backend ${defaultBackend}` : '';
  return `${defaultFlags.trim()}${backend}`.trim();
}

/** Apply to the current notebook's active cell; false when there is none to change. */
export function distributeActiveCell(tracker: INotebookTracker, flags: string): boolean {
  const panel = tracker.currentWidget;
  const cell = panel?.content.activeCell;
  if (!panel || !cell || cell.model.type !== 'code') {
    return false;
  }
  const shared = panel.content.model!.sharedModel;
  cell.model.sharedModel.setSource(withDistribute(cell.model.sharedModel.getSource(), flags));
  const sources = shared.cells.map(c => c.getSource());
  if (!loadsExtension(sources)) {
    shared.insertCell(0, { cell_type: 'code', source: LOAD_EXT });
  }
  return true;
}
