/**
 * Ids and the shapes the REST API answers (docs/rest-api.md is the contract).
 */

export const PLUGIN_ID = 'jupyter-ddl:plugin';
export const NAMESPACE = 'jupyter-ddl';

export namespace CommandIDs {
  export const openJob = 'jupyter-ddl:open-job';
  export const distributeCell = 'jupyter-ddl:distribute-cell';
  export const refresh = 'jupyter-ddl:refresh';
  export const openPanel = 'jupyter-ddl:open-panel';
  export const cancelJob = 'jupyter-ddl:cancel-job';
  export const deleteJob = 'jupyter-ddl:delete-job';
  export const attachJob = 'jupyter-ddl:attach-job';
  export const openNotebook = 'jupyter-ddl:open-notebook';
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
  /** the notebook cell the job came from, when the server knows it */
  cell_id?: string | null;
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
  /** its node rank; null outside the collective (PS, launcher) and for elastic jobs */
  rank?: number | null;
  state: string;
  restarts: number;
  exit_code: number | null;
  message: string | null;
  pod: string | null;
  /** what it uses now: cpu_percent, memory_mb, gpu_util_percent, gpu_memory_mb... */
  resources?: Record<string, number>;
  /** its latest training metrics */
  metrics?: Record<string, number>;
}

/** Which replica failed first, and which failures followed from it. */
export interface IRootCause {
  replica: string;
  rank: number | null;
  summary: string;
  tail: string[];
  consequences: { replica: string; rank: number | null; symptom: string }[];
}

export interface IJobDetail extends IJobSummary {
  code_digest: string | null;
  replicas: IReplica[];
  /** restarts of every replica together, against the one backoff limit */
  restarts?: number;
  backoff_limit?: number | null;
  root_cause?: IRootCause | null;
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

/** Where a metric value came from: `report()`, a Keras progress line, other printed pairs. */
export type MetricSource = 'report' | 'keras' | 'log';

export interface IMetricPoint {
  step: number;
  offset: number;
  values: Record<string, number>;
  source?: MetricSource;
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
  capabilities: { gpus: number; strategies: string[] } | null;
}

export interface IBackends {
  default: string;
  backends: IBackendInfo[];
}

/** One entry of GET /strategies. */
export interface IStrategy {
  name: string;
  framework: string;
  title: string;
  summary: string;
  kind: string;
  /** what `--replicas` may be: its default, fewest and most (null: no limit) */
  replicas: { default: number; min: number; max: number | null };
  gpus: boolean;
  needs_tpu: boolean;
}

export interface ICatalog {
  frameworks: { name: string; title: string }[];
  strategies: IStrategy[];
  /** most specific first: the first module the notebook imports picks the strategy */
  import_hints: { module: string; strategy: string }[];
}

/** User settings (schema/plugin.json). */
export interface ISettings {
  refreshInterval: number;
  defaultBackend: string;
  extraFlags: string;
}

export const DEFAULT_SETTINGS: ISettings = {
  refreshInterval: 3,
  defaultBackend: '',
  extraFlags: ''
};
