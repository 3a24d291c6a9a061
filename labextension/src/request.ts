/**
 * The REST helper: every call to the server goes through here, with the server's
 * base URL and credentials (ServerConnection), so the extension works under a
 * base URL prefix (Kubeflow notebook servers) and behind JupyterHub.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { IFailure } from './pure/actions';
import { ISSEvent, parseSSE } from './pure/sse';
import { ILogLine, NAMESPACE } from './tokens';

export type { ISSEvent };

/** An error answer of the API: the server's one-line message. */
export class APIError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
  }
}

/** Any request's failure as status and message: status 0 when no answer came at all. */
export function failureOf(error: unknown): IFailure {
  if (error instanceof APIError) {
    return { status: error.status, message: error.message };
  }
  return { status: 0, message: error instanceof Error ? error.message : String(error) };
}

/**
 * The language JupyterLab is set to (its translator's code, e.g. `ko-KR`), sent as
 * `Accept-Language` so that the server's messages (errors, refusals) come in it; empty:
 * the browser's own header, and the server's configured language.
 */
let language = '';

/** Set once by the plugin from JupyterLab's translator. */
export function setLanguage(code: string): void {
  language = code && code !== 'default' ? code.replace('_', '-') : '';
}

/** `init` with the language header added (a header the caller set wins). */
function withLanguage(init: RequestInit): RequestInit {
  if (!language) {
    return init;
  }
  const headers = new Headers(init.headers);
  if (!headers.has('Accept-Language')) {
    headers.set('Accept-Language', language);
  }
  return { ...init, headers };
}

function url(path: string, params: Record<string, string | number | undefined> = {}): string {
  const settings = ServerConnection.makeSettings();
  const query = Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  const base = URLExt.join(settings.baseUrl, NAMESPACE, path);
  return query ? `${base}?${query}` : base;
}

/** Call the API; resolves with the JSON body, rejects with an APIError. */
export async function requestAPI<T>(
  path: string,
  init: RequestInit = {},
  params: Record<string, string | number | undefined> = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url(path, params), withLanguage(init), settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { message: text };
    }
  }
  if (!response.ok) {
    const message = (data as { message?: string } | null)?.message ?? response.statusText;
    throw new APIError(response.status, message);
  }
  return data as T;
}

/**
 * Read the server-sent events of `path` until the server ends the stream or `signal`
 * aborts; resolves with null then, or with a one-line message when it failed.
 * fetch streaming rather than EventSource, so the request carries the same
 * credentials as every other API call (EventSource cannot send the token header).
 */
export async function readEvents(
  path: string,
  params: Record<string, string | number | undefined>,
  onEvents: (events: ISSEvent[]) => void,
  signal: AbortSignal
): Promise<string | null> {
  const settings = ServerConnection.makeSettings();
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url(path, params), withLanguage({ signal }), settings);
  } catch (error) {
    return signal.aborted ? null : String(error);
  }
  if (!response.ok || !response.body) {
    const text = await response.text();
    let message = text || response.statusText;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not JSON: the text itself
    }
    return `${response.status} ${message}`;
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        return null;
      }
      const parsed = parseSSE(buffer + value);
      buffer = parsed.rest;
      if (parsed.events.length) {
        onEvents(parsed.events);
      }
    }
  } catch (error) {
    return signal.aborted ? null : String(error);
  }
}

export interface IFollowHandlers {
  onLines(lines: ILogLine[]): void;
  onEnd(final: { state: string } | null): void;
  onError(message: string): void;
}

/**
 * Follow the log of one replica, or of every replica (`replica` null), from `offset`
 * (per replica) until the job ends or `signal` aborts.
 */
export async function followLogs(
  job: string,
  replica: string | null,
  offset: number,
  handlers: IFollowHandlers,
  signal: AbortSignal
): Promise<void> {
  const params = { replica: replica ?? undefined, offset, follow: 'true' };
  const failed = await readEvents(
    `jobs/${encodeURIComponent(job)}/logs`,
    params,
    events => {
      const lines: ILogLine[] = [];
      for (const ev of events) {
        if (ev.event === 'log') {
          lines.push(JSON.parse(ev.data) as ILogLine);
        } else if (ev.event === 'end') {
          handlers.onLines(lines.splice(0));
          handlers.onEnd(JSON.parse(ev.data));
        } else if (ev.event === 'error') {
          handlers.onError((JSON.parse(ev.data) as { message: string }).message);
        }
      }
      if (lines.length) {
        handlers.onLines(lines);
      }
    },
    signal
  );
  if (failed) {
    handlers.onError(failed);
  }
}
