import assert from 'node:assert/strict';
import { test } from 'node:test';

import { actionAllowed, actionFailedLine, confirmText, outageLine } from '../src/pure/actions';
import { english, fill, ITrans, stateWord } from '../src/pure/i18n';
import { countProblem } from '../src/pure/flags';
import { endedLine, startedAndElapsed } from '../src/pure/jobs';

/** A translator that marks every message it is asked for: text outside the marks bypassed it. */
const marking: ITrans = { __: (msgid: string, ...args: unknown[]) => `«${fill(msgid, args)}»` };

test('fill puts the arguments in as JupyterLab does, %% is a percent sign', () => {
  assert.equal(fill('%1 of %2', ['a', 3]), 'a of 3');
  assert.equal(fill('Insert %1', ['%%distribute']), 'Insert %%distribute');
  assert.equal(fill('puts a %%distribute line', []), 'puts a %distribute line');
  assert.equal(english.__('%1 running', 2), '2 running');
});

test('every word of the confirmation, the refusals and the outage line goes through the translator', () => {
  const job = { name: 'mnist', backend: 'local', state: 'Running' as const, finished: false, total: 2 };
  const text = confirmText('delete', job, marking);
  for (const part of [text.title, text.accept, text.reject]) {
    assert.match(part, /^«.*»$/);
  }
  assert.equal(text.body.replace(/«[^«»]*(«[^»]*»[^«»]*)*»/g, '').trim(), '');
  assert.match(actionAllowed('cancel', { ...job, state: 'Succeeded', finished: true }, marking).why, /^«.*»$/);
  assert.match(actionFailedLine('cancel', 'mnist', { status: 0, message: '' }, marking), /^«.*»$/);
  assert.match(outageLine({ status: 0, message: '' }, 95, true, marking), /^«.*»$/);
  assert.match(endedLine({ ...job, state: 'Failed', finished: true, message: 'boom' } as never, marking), /^«.*»$/);
});

test('a state word is translated, an unknown state is shown as it is', () => {
  assert.equal(stateWord(marking, 'Failed'), '«Failed»');
  assert.equal(stateWord(marking, 'Weird'), 'Weird');
});

test('the form\'s range problem and the started time go through the translator, plain words kept', () => {
  for (const [raw, max] of [['0', null], ['9', 8], ['', 1], ['2.5', 3]] as const) {
    const said = countProblem('«Replicas (total)»', raw, 1, max, marking) ?? '';
    assert.match(said, /^«.*»$/, said);
  }
  const now = new Date(2026, 10, 27, 15, 0);
  const job = { started: now.getTime() / 1000 - 60, created: null, elapsed: 18 };
  assert.match(startedAndElapsed(job, now, marking), /^«started .*» · /);
  assert.equal(
    endedLine({ name: 'm', state: 'Failed', message: 'see `%ddl logs m`' } as never),
    'Training job m failed: see %ddl logs m'
  );
});
