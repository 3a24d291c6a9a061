/**
 * The job actions every surface shares (sidebar row buttons, the job view's toolbar,
 * the palette commands): cancel and delete with a confirmation that states the
 * consequences first, and opening the notebook a job came from at its cell. Failures
 * are one line in JupyterLab's notifications; a job deleted meanwhile is said so.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, InputDialog, Notification, showDialog } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';

import { actionAllowed, actionFailedLine, confirmText, JobAction } from './pure/actions';
import { english, ITrans, stateWord } from './pure/i18n';
import { failureOf, requestAPI } from './request';
import { IJobSummary } from './tokens';

type ActionJob = Pick<IJobSummary, 'name' | 'backend' | 'state' | 'finished' | 'total'>;

/**
 * Ask, then run `action` on `job`; `after` runs once the server answered (either way),
 * so the views refresh. Resolves true when the action ran.
 */
export async function runAction(
  action: JobAction,
  job: ActionJob,
  after: () => void,
  trans: ITrans = english
): Promise<boolean> {
  const allowed = actionAllowed(action, job, trans);
  if (!allowed.ok) {
    Notification.info(allowed.why, { autoClose: 6000 });
    return false;
  }
  const text = confirmText(action, job, trans);
  const answer = await showDialog({
    title: text.title,
    body: text.body,
    buttons: [Dialog.cancelButton({ label: text.reject }), Dialog.warnButton({ label: text.accept })],
    // Enter on the dialog keeps the job: destroying it takes a deliberate choice
    defaultButton: 0
  });
  if (!answer.button.accept) {
    return false;
  }
  const path = `jobs/${encodeURIComponent(job.name)}`;
  const params = { backend: job.backend };
  try {
    if (action === 'cancel') {
      await requestAPI(`${path}/cancel`, { method: 'POST' }, params);
    } else {
      await requestAPI(path, { method: 'DELETE' }, params);
      Notification.success(trans.__('Deleted %1: its record and logs are gone.', job.name), { autoClose: 5000 });
    }
    return true;
  } catch (error) {
    const failure = failureOf(error);
    const line = actionFailedLine(action, job.name, failure, trans);
    if (failure.status === 404) {
      Notification.info(line, { autoClose: 8000 });
    } else {
      Notification.error(line, { autoClose: false });
    }
    return false;
  } finally {
    after();
  }
}

/** The job `args.name` names, else the one the user picks from `candidates` (palette). */
export async function pickJob(
  args: { name?: unknown; backend?: unknown },
  jobs: readonly IJobSummary[],
  candidates: readonly IJobSummary[],
  title: string,
  trans: ITrans = english
): Promise<IJobSummary | null> {
  if (typeof args.name === 'string') {
    const named = jobs.find(j => j.name === args.name && (args.backend === undefined || j.backend === args.backend));
    if (!named) {
      Notification.info(trans.__('%1 no longer exists: it was deleted meanwhile.', args.name), { autoClose: 8000 });
    }
    return named ?? null;
  }
  if (!candidates.length) {
    Notification.info(trans.__('%1: no job to choose from.', title), { autoClose: 5000 });
    return null;
  }
  const labels = candidates.map(j => `${j.name} (${j.backend}, ${stateWord(trans, j.state)})`);
  const answer = await InputDialog.getItem({ title, items: labels, current: 0 });
  if (!answer.button.accept || answer.value === null) {
    return null;
  }
  return candidates[labels.indexOf(answer.value)] ?? null;
}

/**
 * Open the notebook `job` came from and, when the job names its cell and the cell is
 * still there, select it and scroll to it. Paths are relative to the server's root.
 */
export async function openNotebook(
  app: JupyterFrontEnd,
  job: Pick<IJobSummary, 'name' | 'notebook' | 'cell_id'>,
  trans: ITrans = english
): Promise<void> {
  if (!job.notebook) {
    Notification.info(trans.__('%1 does not say which notebook it came from.', job.name), { autoClose: 6000 });
    return;
  }
  let widget: unknown;
  try {
    widget = await app.commands.execute('docmanager:open', { path: job.notebook, factory: 'Notebook' });
  } catch (error) {
    Notification.error(trans.__('Could not open %1: %2', job.notebook, (error as Error).message), { autoClose: false });
    return;
  }
  if (!(widget instanceof NotebookPanel) || !job.cell_id) {
    return;
  }
  await widget.context.ready;
  await widget.revealed;
  const notebook = widget.content;
  const index = notebook.widgets.findIndex(cell => cell.model.id === job.cell_id);
  if (index < 0) {
    Notification.info(trans.__('The cell %1 came from is no longer in %2.', job.name, job.notebook), {
      autoClose: 6000
    });
    return;
  }
  notebook.activeCellIndex = index;
  await notebook.scrollToItem(index, 'center');
}
