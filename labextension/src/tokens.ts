/**
 * Ids and the shapes the REST API answers (docs/rest-api.md is the contract).
 */

export const PLUGIN_ID = 'jupyter-ddl:plugin';
export const NAMESPACE = 'jupyter-ddl';

export namespace CommandIDs {
  export const openJob = 'jupyter-ddl:open-job';
  export const distributeCell = 'jupyter-ddl:distribute-cell';
  export const refresh = 'jupyter-ddl:refresh';
}

export type JobState =
  | 'Pending'
  | 'Created'
  | 'Running'
  | 'Restarting'
  | 'Succeeded'
  | 'Failed'
  | 'Cancelled';

export interface IJobSummary {
  name: string;
  backend: string;
  namespace: string | null;
  strategy: string;
  state: JobState;
  finished: boolean;
  ready: number;
  total: number;
  created: number | null;
  started: number | null;
  ended: number | null;
  elapsed: number | null;
  notebook: string | null;
  message: string | null;
  metrics: Record<string, number>;
}

/** A backend the server could not ask (not installed, not configured, not answering). */
export interface IUnavailable {
  backend: string;
  error: string;
  /** One line naming the cause and the next step. */
  message: string;
}

/** `GET jobs`: the jobs it has, and the backends it could not ask. */
export interface IJobList {
  jobs: IJobSummary[];
  /** Absent from servers older than this field. */
  unavailable?: IUnavailable[];
}

export interface IReplica {
  id: string;
  role: string;
  index: number;
  state: string;
  restarts: number;
  exit_code: number | null;
  message: string | null;
  pod: string | null;
}

export interface IJobDetail extends IJobSummary {
  code_digest: string | null;
  replicas: IReplica[];
  spec: {
    strategy: string;
    replicas: Record<string, number>;
    image: string | null;
    queue: string | null;
  } | null;
  actions: { cancel: boolean; delete: boolean; follow_logs: boolean };
}

export interface ILogLine {
  replica: string;
  offset: number;
  text: string;
  time: number | null;
  stream: string;
}

export interface IMetricPoint {
  step: number;
  offset: number;
  values: Record<string, number>;
}

export interface IMetricsPage {
  replica: string | null;
  points: IMetricPoint[];
  next_offset: number;
}

export interface IBackendInfo {
  name: string;
  default: boolean;
  available: boolean;
  error: string | null;
}

/** User settings (schema/plugin.json). */
export interface ISettings {
  refreshInterval: number;
  defaultBackend: string;
  defaultFlags: string;
}

export const DEFAULT_SETTINGS: ISettings = {
  refreshInterval: 3,
  defaultBackend: '',
  defaultFlags: '--strategy torch-ddp --replicas 2'
};
