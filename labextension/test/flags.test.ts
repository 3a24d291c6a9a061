import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  cellBody,
  countProblem,
  flagsFor,
  importedModules,
  loadsExtension,
  parseFlags,
  suggestStrategy,
  withDistribute
} from '../src/pure/flags';

const choice = { strategy: 'ddp', replicas: 2, gpus: 0, backend: 'local', extra: '' };

test('flagsFor names the backend only when it is not the default', () => {
  assert.equal(flagsFor(choice, 'local'), '--strategy ddp --replicas 2');
  assert.equal(flagsFor({ ...choice, gpus: 1, backend: 'kubernetes', extra: ' --wait ' }, 'local'),
    '--strategy ddp --replicas 2 --gpus 1 --backend kubernetes --wait');
});

test('withDistribute replaces an existing magic line and keeps the code', () => {
  const cell = '\n%%distribute --strategy ddp\nprint(1)';
  assert.equal(cellBody(cell), 'print(1)');
  assert.equal(withDistribute(cell, '--strategy fsdp'), '%%distribute --strategy fsdp\nprint(1)');
  assert.equal(withDistribute('x = 1', ''), '%%distribute\nx = 1');
});

test('parseFlags reads short, long and inline forms, the rest as extra', () => {
  assert.deepEqual(parseFlags('%%distribute -s ddp --replicas=3 --gpus 2 -b kubernetes --wait'), {
    strategy: 'ddp',
    replicas: 3,
    gpus: 2,
    backend: 'kubernetes',
    extra: '--wait'
  });
  assert.deepEqual(parseFlags('print(1)'), {});
});

test('imports and %load_ext are recognised', () => {
  const sources = ['import torch.nn as nn, numpy  # x', 'from lightning.pytorch import Trainer', '%load_ext jupyter_ddl'];
  assert.deepEqual([...importedModules(sources)].sort(), ['lightning', 'numpy', 'torch']);
  assert.equal(loadsExtension(sources), true);
  assert.equal(loadsExtension(['import jupyter_ddl']), false);
  const catalog = {
    import_hints: [
      { module: 'lightning', strategy: 'lightning' },
      { module: 'torch', strategy: 'ddp' }
    ]
  };
  assert.equal(suggestStrategy(catalog as never, sources), 'lightning');
  assert.equal(suggestStrategy(catalog as never, ['import os']), null);
});

test('a count out of range is said in one line, never corrected', () => {
  assert.equal(
    countProblem('Replicas (total)', '0', 1, null),
    'Replicas (total) must be a whole number 1 or more for this strategy; 0 was given.'
  );
  assert.equal(countProblem('Replicas (total)', '9', 2, 8), 'Replicas (total) must be a whole number from 2 to 8 for this strategy; 9 was given.');
  assert.match(countProblem('Replicas (total)', '2.5', 1, null) ?? '', /whole number/);
  assert.match(countProblem('GPUs per replica', '', 0, null) ?? '', /nothing was given/);
  assert.match(countProblem('GPUs per replica', '-1', 0, null) ?? '', /0 or more/);
  assert.equal(countProblem('Replicas (total)', '3', 1, 8), null);
  assert.equal(countProblem('GPUs per replica', '0', 0, null), null);
});
