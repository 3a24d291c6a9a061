/**
 * "Distribute this cell", the pure parts: which framework the notebook imports, the
 * flags of the dialog's choice, the cell with its `%%distribute` line.
 */
import { ICatalog } from '../tokens';
import { english, ITrans } from './i18n';

export const LOAD_EXT = '%load_ext jupyter_ddl';
const MAGIC = /^\s*%%distribute\b.*$/;

/** What the dialog asks for. */
export interface IChoice {
  strategy: string;
  replicas: number;
  gpus: number;
  backend: string;
  /** more flags, as typed (e.g. `--wait --name my-job`) */
  extra: string;
}

/** The flags of a choice; `--backend` only when it is not the server's default. */
export function flagsFor(choice: IChoice, defaultBackend: string): string {
  const parts = [`--strategy ${choice.strategy}`, `--replicas ${choice.replicas}`];
  if (choice.gpus > 0) {
    parts.push(`--gpus ${choice.gpus}`);
  }
  if (choice.backend && choice.backend !== defaultBackend) {
    parts.push(`--backend ${choice.backend}`);
  }
  if (choice.extra.trim()) {
    parts.push(choice.extra.trim());
  }
  return parts.join(' ');
}

/**
 * What is wrong with a count typed in the dialog, in one line, or null: it must be a
 * whole number from `min` to `max` (null: no upper limit). Never corrected silently:
 * a 0 the user typed is said, not turned into 1.
 */
export function countProblem(
  label: string,
  raw: string,
  min: number,
  max: number | null,
  trans: ITrans = english
): string | null {
  const text = raw.trim();
  const value = Number(text);
  if (text === '' || !Number.isInteger(value) || value < min || (max !== null && value > max)) {
    const given = text === '' ? trans.__('nothing was given') : trans.__('%1 was given', text.slice(0, 20));
    return max === null
      ? trans.__('%1 must be a whole number %2 or more for this strategy; %3.', label, min, given)
      : min === max
        ? trans.__('%1 must be a whole number %2 for this strategy; %3.', label, min, given)
        : trans.__('%1 must be a whole number from %2 to %3 for this strategy; %4.', label, min, max, given);
  }
  return null;
}

/** The cell's code without a `%%distribute` first line. */
export function cellBody(source: string): string {
  const lines = source.split('\n');
  const first = lines.findIndex(l => l.trim() !== '');
  if (first >= 0 && MAGIC.test(lines[first])) {
    lines.splice(0, first + 1);
  }
  return lines.join('\n');
}

/** The cell with `%%distribute FLAGS` as its first line (replacing one already there). */
export function withDistribute(source: string, flags: string): string {
  return `%%distribute ${flags}`.trimEnd() + '\n' + cellBody(source).replace(/^\s*\n/, '');
}

/** The flags of the cell's `%%distribute` line, split into the dialog's fields. */
export function parseFlags(source: string): Partial<IChoice> {
  const line = source.split('\n').find(l => l.trim() !== '') ?? '';
  if (!MAGIC.test(line)) {
    return {};
  }
  const tokens = line.trim().split(/\s+/).slice(1);
  const out: Partial<IChoice> = {};
  const rest: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const [flag, inline] = tokens[i].split('=', 2);
    const value = inline ?? tokens[i + 1];
    const take = () => (inline === undefined ? (i++, value) : value);
    if (flag === '--strategy' || flag === '-s') {
      out.strategy = take();
    } else if (flag === '--replicas' || flag === '-n') {
      out.replicas = Number(take());
    } else if (flag === '--gpus') {
      out.gpus = Number(take());
    } else if (flag === '--backend' || flag === '-b') {
      out.backend = take();
    } else {
      rest.push(tokens[i]);
    }
  }
  out.extra = rest.join(' ');
  return out;
}

/** Whether some cell already loads the extension. */
export function loadsExtension(sources: string[]): boolean {
  return sources.some(s => /^\s*%(load_ext|reload_ext)\s+jupyter_ddl\b/m.test(s));
}

/** Top-level modules the sources import (`import a.b as c, d` / `from e.f import g`). */
export function importedModules(sources: string[]): Set<string> {
  const found = new Set<string>();
  for (const line of sources.join('\n').split('\n')) {
    const from = /^\s*from\s+([A-Za-z_][\w.]*)\s+import\b/.exec(line);
    if (from) {
      found.add(from[1].split('.')[0]);
      continue;
    }
    const imp = /^\s*import\s+(.+)$/.exec(line);
    if (imp) {
      for (const part of imp[1].split('#')[0].split(',')) {
        const name = part.trim().split(/\s+/)[0];
        if (/^[A-Za-z_][\w.]*$/.test(name)) {
          found.add(name.split('.')[0]);
        }
      }
    }
  }
  return found;
}

/** The strategy the imports suggest (the server's hints, most specific first), or null. */
export function suggestStrategy(catalog: ICatalog, sources: string[]): string | null {
  const modules = importedModules(sources);
  return catalog.import_hints.find(h => modules.has(h.module))?.strategy ?? null;
}
