/**
 * The part of JupyterLab's translator the pure modules use: `trans.__(message, ...args)`
 * with `%1`, `%2` placeholders. JupyterLab's `TranslationBundle` is one; `english`
 * is the source language (node tests and callers without a translator). Messages go
 * through `trans.__` with a literal first argument so that the catalog extractor
 * (jupyter_ddl/i18n/extract.py) finds them.
 */
export interface ITrans {
  __(msgid: string, ...args: unknown[]): string;
}

/** `%1` → the first argument, `%%` → `%`, as JupyterLab's gettext fills in a message. */
export function fill(message: string, args: readonly unknown[]): string {
  return message
    .replace(/%%/g, '%% ')
    .replace(/%(\d+)/g, (whole, n: string) => {
      const i = Number(n) - 1;
      return i >= 0 && i < args.length ? String(args[i]) : whole;
    })
    .replace(/%% /g, '%');
}

/** The English source: every message as written, its placeholders filled in. */
export const english: ITrans = { __: (msgid: string, ...args: unknown[]) => fill(msgid, args) };

/** A job state in the user's language (the data and CSS keep the English word). */
export function stateWord(trans: ITrans, state: string): string {
  const words: Record<string, string> = {
    Pending: trans.__('Pending'),
    Created: trans.__('Created'),
    Starting: trans.__('Starting'),
    Running: trans.__('Running'),
    Restarting: trans.__('Restarting'),
    Succeeded: trans.__('Succeeded'),
    Failed: trans.__('Failed'),
    Cancelled: trans.__('Cancelled'),
    Terminated: trans.__('Terminated'),
    Unknown: trans.__('Unknown')
  };
  return words[state] ?? state;
}
