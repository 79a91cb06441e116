import { ApiError, type TallyApi } from '../tally-api.js';

/**
 * The experiments API as the Experiment kind uses it, on the operator's shared client (its key,
 * timeouts, X-Tally-Resource on writes and ApiError kinds come from TallyApi).
 */
/** An experiment as the API returns it (the members the operator compares and shows). */
export interface ApiExperiment extends ExperimentBody {
  id: number;
  projectId: number;
  status: 'running' | 'stopped';
  managedBy: string | null;
}

/** The experiments API's body, minus the project (members as the service stores them). */
export interface ExperimentBody {
  key: string;
  name: string;
  flagKey: string;
  control: string;
  metrics: unknown[];
  primaryMetricId: string;
  engine: string;
  confidenceLevel: number;
  sequential: boolean;
  correction: string;
  startAt: number | null;
  endAt: number | null;
}

export interface ApiVariantResult {
  key: string;
  units: number;
  mean: number | null;
  lift?: { mean: number; low: number; high: number } | null;
  chanceToWin?: number | null;
  pValue?: number | null;
  adjustedPValue?: number | null;
  significant?: boolean | null;
}

export interface ApiExperimentResults {
  computedAt: number;
  exposures: Record<string, number>;
  srm: { pValue: number; ok: boolean };
  metrics: { id: string; variants: ApiVariantResult[] }[];
}

export interface ApiExperimentAnalysis {
  ok: boolean;
  decision: 'Inconclusive' | 'Winner' | 'Loser' | 'SampleRatioMismatch';
  winner: string | null;
  primary: { id: string; variants: ApiVariantResult[] };
}

export class ExperimentsApi {
  constructor(private readonly api: TallyApi) {}

  /** The experiment a resource manages in a project (by the service's managedBy, never by an id from status). */
  async find(projectId: number, resource: string): Promise<ApiExperiment | undefined> {
    const all = await this.api.call<ApiExperiment[]>('GET', `/api/experiments?projectId=${projectId}`, undefined);
    return all.find((e) => e.managedBy === resource);
  }

  async get(id: number): Promise<ApiExperiment | undefined> {
    try {
      return await this.api.call<ApiExperiment>('GET', `/api/experiments/${id}`, undefined);
    } catch (err) {
      if (err instanceof ApiError && err.kind === 'not_found') return undefined;
      throw err;
    }
  }

  create(projectId: number, body: ExperimentBody, resource: string): Promise<ApiExperiment> {
    return this.api.call('POST', '/api/experiments', resource, { projectId, ...body });
  }

  update(id: number, body: Partial<ExperimentBody>, resource: string): Promise<ApiExperiment> {
    return this.api.call('PUT', `/api/experiments/${id}`, resource, body);
  }

  delete(id: number, resource: string): Promise<unknown> {
    return this.api.call('DELETE', `/api/experiments/${id}`, resource);
  }

  release(id: number, resource: string): Promise<unknown> {
    return this.api.call('POST', `/api/experiments/${id}/release`, resource);
  }

  results(id: number): Promise<ApiExperimentResults> {
    return this.api.call('GET', `/api/experiments/${id}/results`, undefined);
  }

  analysis(id: number): Promise<ApiExperimentAnalysis> {
    return this.api.call('GET', `/api/experiments/${id}/analysis`, undefined);
  }
}

const clients = new WeakMap<TallyApi, ExperimentsApi>();
/** The experiments calls on the operator's client (one per client). */
export function experimentsApi(api: TallyApi): ExperimentsApi {
  let c = clients.get(api);
  if (!c) clients.set(api, c = new ExperimentsApi(api));
  return c;
}
