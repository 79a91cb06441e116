import { queryString, request } from '../../api.js';

/**
 * The experiments API's shapes. Written out here because the server's `./schemas` entry does not
 * export the experiment schemas (apps/server/src/experiments/schema.ts); keep the two the same.
 */
export type MetricKind = 'conversion' | 'count' | 'sum';
export type Engine = 'bayesian' | 'frequentist';
export type Correction = 'none' | 'holm' | 'bh';
export type Decision = 'Inconclusive' | 'Winner' | 'Loser' | 'SampleRatioMismatch';

export interface ExperimentMetric {
  id: string;
  name?: string;
  kind: MetricKind;
  event: string;
  property?: string;
  windowHours?: number;
}

export interface Experiment {
  id: number;
  projectId: number;
  key: string;
  name: string;
  flagKey: string;
  control: string;
  metrics: ExperimentMetric[];
  primaryMetricId: string;
  engine: Engine;
  confidenceLevel: number;
  sequential: boolean;
  correction: Correction;
  startAt: number | null;
  endAt: number | null;
  status: 'running' | 'stopped';
  stoppedAt: number | null;
  createdBy: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface CreateExperiment {
  key: string;
  name?: string;
  flagKey: string;
  control?: string;
  metrics: ExperimentMetric[];
  primaryMetricId?: string;
  engine?: Engine;
  confidenceLevel?: number;
  sequential?: boolean;
  correction?: Correction;
  startAt?: number | null;
  endAt?: number | null;
}

export interface VariantResult {
  key: string;
  units: number;
  total: number | null;
  mean: number | null;
  variance: number | null;
  /** Absent on the control; null with a `reason` when the comparison cannot be computed. */
  lift?: { mean: number; low: number; high: number } | null;
  chanceToWin?: number | null;
  pValue?: number | null;
  sequentialPValue?: number | null;
  adjustedPValue?: number | null;
  significant?: boolean | null;
  reason?: string;
}

export interface MetricResult {
  id: string;
  kind: MetricKind;
  variants: VariantResult[];
}

export interface ExperimentResults {
  experimentId: number;
  computedAt: number;
  engine: Engine;
  confidenceLevel: number;
  sequential: boolean;
  correction: Correction;
  control: string;
  exposures: Record<string, number>;
  excludedMultipleVariants: number;
  srm: { pValue: number; ok: boolean };
  metrics: MetricResult[];
  /** New exposed units per UTC day and variant (`YYYY-MM-DD` days), and their running sum. */
  exposuresOverTime: { days: string[]; variants: Array<{ key: string; new: number[]; cumulative: number[] }> };
  cached_at?: number;
}

export interface ExperimentAnalysis {
  ok: boolean;
  srmOk: boolean;
  decision: Decision;
  winner: string | null;
  primary: MetricResult;
}

/** What a results request may recompute with (`?engine=&sequential=&correction=`). */
export interface ResultsOverrides {
  engine?: Engine;
  sequential?: boolean;
  correction?: Correction;
}

export const experimentsApi = {
  list: (projectId: string) => request<Experiment[]>('GET', `/api/experiments${queryString({ projectId })}`),
  get: (id: number | string) => request<Experiment>('GET', `/api/experiments/${id}`),
  create: (projectId: string, body: CreateExperiment) => request<Experiment>('POST', `/api/experiments${queryString({ projectId })}`, body),
  stop: (id: number) => request<Experiment>('POST', `/api/experiments/${id}/stop`),
  remove: (id: number) => request<{ ok: true }>('DELETE', `/api/experiments/${id}`),
  results: (id: number | string, o: ResultsOverrides = {}) =>
    request<ExperimentResults>('GET', `/api/experiments/${id}/results${queryString({ engine: o.engine, sequential: o.sequential === undefined ? undefined : String(o.sequential), correction: o.correction })}`),
  analysis: (id: number | string) => request<ExperimentAnalysis>('GET', `/api/experiments/${id}/analysis`),
};
