import assert from 'node:assert/strict';
import { test } from 'node:test';

import { actionAllowed, actionFailedLine, confirmText, outageLine } from '../src/pure/actions';
import { english, fill, ITrans, stateWord } from '../src/pure/i18n';
import { endedLine } from '../src/pure/jobs';

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
