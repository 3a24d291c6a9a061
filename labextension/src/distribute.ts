/**
 * "Distribute this cell": the edit of the notebook. The pure parts (flags, the
 * magic line, import hints) are pure/flags.ts; the dialog is distributeform.ts;
 * the strategies and the import hints come from the server (GET /strategies).
 */
import { Notebook, NotebookPanel } from '@jupyterlab/notebook';

import { LOAD_EXT, loadsExtension, withDistribute } from './pure/flags';

type CellModel = NonNullable<Notebook['activeCell']>['model'];

/** The code of the active cell and of every code cell above it. */
export function sourcesUpTo(panel: NotebookPanel, cell: CellModel): string[] {
  const out: string[] = [];
  for (const c of panel.content.widgets) {
    if (c.model.type === 'code') {
      out.push(c.model.sharedModel.getSource());
    }
    if (c.model === cell) {
      break;
    }
  }
  return out;
}

/** Write the magic line into `cell`, and `%load_ext jupyter_ddl` on top if no cell has it. */
export function applyDistribute(panel: NotebookPanel, cell: CellModel, flags: string): void {
  cell.sharedModel.setSource(withDistribute(cell.sharedModel.getSource(), flags));
  const shared = panel.content.model!.sharedModel;
  if (!loadsExtension(shared.cells.map(c => c.getSource()))) {
    shared.insertCell(0, { cell_type: 'code', source: LOAD_EXT });
  }
}
