/**
 * What the job actions (cancel, delete) may do and what they say, without a DOM: when
 * each is offered, the consequences the confirmation states before it runs, and the one
 * line a failure becomes. Also the sidebar's line when the server does not answer. The
 * sidebar, the job view and the palette commands share these; node unit tests cover them.
 */
import { IJobSummary } from '../tokens';
import { plainWords } from './format';
import { english, ITrans } from './i18n';

export type JobAction = 'cancel' | 'delete';

/** The states the server reports; anything else is a state this page cannot judge. */
const KNOWN_STATES = new Set(['Pending', 'Created', 'Running', 'Restarting', 'Succeeded', 'Failed', 'Cancelled']);

type ActionJob = Pick<IJobSummary, 'name' | 'backend' | 'state' | 'finished' | 'total'>;

/**
 * Whether `action` is offered for `job`, and if not, why (the disabled button's tooltip).
 * Cancel is for a job that still runs; delete for any job whose state is known (a
 * running one is cancelled first, as the server does).
 */
export function actionAllowed(
  action: JobAction,
  job: ActionJob,
  trans: ITrans = english
): { ok: boolean; why: string } {
  if (!KNOWN_STATES.has(job.state)) {
    const state = job.state || trans.__('none');
    return { ok: false, why: trans.__('%1 is in an unknown state (%2): refresh, then try again', job.name, state) };
  }
  if (action === 'cancel' && job.finished) {
    return { ok: false, why: trans.__('%1 has ended (%2): nothing to cancel', job.name, job.state) };
  }
  return { ok: true, why: '' };
}

/** The confirmation: title, the consequences in words, and the two buttons' labels. */
export interface IConfirmText {
  title: string;
  body: string;
  accept: string;
  reject: string;
}

function replicas(total: number, trans: ITrans): string {
  return total === 1
    ? trans.__('its one replica')
    : total > 1
      ? trans.__('all %1 replicas', total)
      : trans.__('every replica');
}

/** What happens when `action` runs on `job`, said before it runs. */
export function confirmText(action: JobAction, job: ActionJob, trans: ITrans = english): IConfirmText {
  if (action === 'cancel') {
    return {
      title: trans.__('Cancel %1?', job.name),
      body:
        trans.__('Stops %1 of %2 now; unsaved training progress is lost.', replicas(job.total, trans), job.name) +
        ' ' +
        trans.__(
          'Its record, logs and metrics so far are kept. A cancelled job cannot be resumed: run the cell again to start over.'
        ),
      accept: trans.__('Cancel job'),
      reject: trans.__('Keep running')
    };
  }
  const running = job.finished
    ? ''
    : trans.__('It is still running: %1 are stopped first.', replicas(job.total, trans)) + ' ';
  return {
    title: trans.__('Delete %1?', job.name),
    body:
      running +
      trans.__(
        "Removes the job's record, logs and metrics from the %1 backend for good; the notebook and its cell are not touched. This cannot be undone.",
        job.backend
      ),
    accept: trans.__('Delete job'),
    reject: trans.__('Keep it')
  };
}

/** A failed request as the actions see it: the HTTP status (0: no answer) and its message. */
export interface IFailure {
  status: number;
  message: string;
}

/** The one line a failed action becomes: a job that went away meanwhile is no error wall. */
export function actionFailedLine(action: JobAction, name: string, failure: IFailure, trans: ITrans = english): string {
  if (failure.status === 404) {
    return action === 'cancel'
      ? trans.__('%1 no longer exists: it was deleted meanwhile, so there is nothing to cancel.', name)
      : trans.__('%1 no longer exists: it was deleted meanwhile.', name);
  }
  if (failure.status === 0) {
    return action === 'cancel'
      ? trans.__('Could not cancel %1: the Jupyter server does not answer. Check that it runs, then try again.', name)
      : trans.__('Could not delete %1: the Jupyter server does not answer. Check that it runs, then try again.', name);
  }
  const message = plainWords(failure.message.split('\n')[0]).slice(0, 300);
  return action === 'cancel'
    ? trans.__('Could not cancel %1: %2', name, message)
    : trans.__('Could not delete %1: %2', name, message);
}

/** `95` → `1 min`, `30` → `30 s`, `7300` → `2 h`: how old what the sidebar shows is. */
export function age(seconds: number, trans: ITrans = english): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) {
    return trans.__('%1 s', s);
  }
  if (s < 3600) {
    return trans.__('%1 min', Math.floor(s / 60));
  }
  return trans.__('%1 h', Math.floor(s / 3600));
}

/**
 * The sidebar's one line while the list cannot be fetched: what is wrong, the age of
 * the rows still shown (they are kept), and the next step. `status` 0 is no answer at
 * all (server down, network); 502-504 a proxy whose server is gone.
 */
export function outageLine(
  failure: IFailure,
  shownAgeS: number | null,
  hasRows: boolean,
  trans: ITrans = english
): string {
  const gone = failure.status === 0 || (failure.status >= 502 && failure.status <= 504);
  const what = gone
    ? trans.__('The Jupyter server does not answer')
    : trans.__('The job list could not be read (%1)', failure.message.split('\n')[0].slice(0, 200));
  const kept = hasRows && shownAgeS !== null ? trans.__('; the jobs below are from %1 ago', age(shownAgeS, trans)) : '';
  const next = gone
    ? trans.__('Retrying; check that the server runs, or press Refresh.')
    : trans.__('Retrying; press Refresh to try now.');
  return trans.__('%1%2. %3', what, kept, next);
}
