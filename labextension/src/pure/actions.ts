/**
 * What the job actions (cancel, delete) may do and what they say, without a DOM: when
 * each is offered, the consequences the confirmation states before it runs, and the one
 * line a failure becomes. Also the sidebar's line when the server does not answer. The
 * sidebar, the job view and the palette commands share these; node unit tests cover them.
 */
import { IJobSummary } from '../tokens';
import { plainWords } from './format';

export type JobAction = 'cancel' | 'delete';

/** The states the server reports; anything else is a state this page cannot judge. */
const KNOWN_STATES = new Set(['Pending', 'Created', 'Running', 'Restarting', 'Succeeded', 'Failed', 'Cancelled']);

type ActionJob = Pick<IJobSummary, 'name' | 'backend' | 'state' | 'finished' | 'total'>;

/**
 * Whether `action` is offered for `job`, and if not, why (the disabled button's tooltip).
 * Cancel is for a job that still runs; delete for any job whose state is known (a
 * running one is cancelled first, as the server does).
 */
export function actionAllowed(action: JobAction, job: ActionJob): { ok: boolean; why: string } {
  if (!KNOWN_STATES.has(job.state)) {
    return { ok: false, why: `${job.name} is in an unknown state (${job.state || 'none'}): refresh, then try again` };
  }
  if (action === 'cancel' && job.finished) {
    return { ok: false, why: `${job.name} has ended (${job.state}): nothing to cancel` };
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

function replicas(total: number): string {
  return total === 1 ? 'its one replica' : total > 1 ? `all ${total} replicas` : 'every replica';
}

/** What happens when `action` runs on `job`, said before it runs. */
export function confirmText(action: JobAction, job: ActionJob): IConfirmText {
  if (action === 'cancel') {
    return {
      title: `Cancel ${job.name}?`,
      body:
        `Stops ${replicas(job.total)} of ${job.name} now; unsaved training progress is lost. ` +
        'Its record, logs and metrics so far are kept. A cancelled job cannot be resumed: run the cell again to start over.',
      accept: 'Cancel job',
      reject: 'Keep running'
    };
  }
  const running = job.finished ? '' : `It is still running: ${replicas(job.total)} are stopped first. `;
  return {
    title: `Delete ${job.name}?`,
    body:
      running +
      `Removes the job's record, logs and metrics from the ${job.backend} backend for good; ` +
      'the notebook and its cell are not touched. This cannot be undone.',
    accept: 'Delete job',
    reject: 'Keep it'
  };
}

/** A failed request as the actions see it: the HTTP status (0: no answer) and its message. */
export interface IFailure {
  status: number;
  message: string;
}

/** The one line a failed action becomes: a job that went away meanwhile is no error wall. */
export function actionFailedLine(action: JobAction, name: string, failure: IFailure): string {
  const verb = action === 'cancel' ? 'cancel' : 'delete';
  if (failure.status === 404) {
    return action === 'cancel'
      ? `${name} no longer exists: it was deleted meanwhile, so there is nothing to cancel.`
      : `${name} no longer exists: it was deleted meanwhile.`;
  }
  if (failure.status === 0) {
    return `Could not ${verb} ${name}: the Jupyter server does not answer. Check that it runs, then try again.`;
  }
  const message = plainWords(failure.message.split('\n')[0]).slice(0, 300);
  return `Could not ${verb} ${name}: ${message}`;
}

/** `95` → `1 min`, `30` → `30 s`, `7300` → `2 h`: how old what the sidebar shows is. */
export function age(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min`;
  }
  return `${Math.floor(s / 3600)} h`;
}

/**
 * The sidebar's one line while the list cannot be fetched: what is wrong, the age of
 * the rows still shown (they are kept), and the next step. `status` 0 is no answer at
 * all (server down, network); 502-504 a proxy whose server is gone.
 */
export function outageLine(failure: IFailure, shownAgeS: number | null, hasRows: boolean): string {
  const gone = failure.status === 0 || (failure.status >= 502 && failure.status <= 504);
  const what = gone
    ? 'The Jupyter server does not answer'
    : `The job list could not be read (${failure.message.split('\n')[0].slice(0, 200)})`;
  const kept = hasRows && shownAgeS !== null ? `; the jobs below are from ${age(shownAgeS)} ago` : '';
  const next = gone ? 'Retrying; check that the server runs, or press Refresh.' : 'Retrying; press Refresh to try now.';
  return `${what}${kept}. ${next}`;
}
