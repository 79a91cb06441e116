/**
 * The service's HTTP API as the operator uses it: OPERATOR_KEY (else the superadmin key), and on every write the header
 * `X-Tally-Resource: <Kind>/<namespace>/<name>` that makes the object managed by that resource.
 * Failures are sorted by what the reconciler should do about them (ApiError.kind).
 */
export type ApiErrorKind =
  /** Network error, timeout, 5xx, 429, 401, 403 without a boundary reason (a wrong key is an outage of ours): retry with backoff. */
  | 'unavailable'
  /** 400/422: the API refused the content; its message goes to the condition, no retry. */
  | 'invalid'
  | 'not_found'
  /** 409: managed by another resource (or the API's own conflict). */
  | 'conflict'
  /**
   * 403 with a boundary `reason` (AdoptionRefused, NamespaceNotAllowed, NotManaged: the operator
   * key wrote for an Organization to an organisation that Organization does not manage): the
   * service's own check between teams refused the write; no retry, the resource waits for a
   * change (and the periodic resync). A 403 without a
   * reason stays `unavailable` (a key the service does not accept).
   */
  | 'refused';

export class ApiError extends Error {
  constructor(readonly kind: ApiErrorKind, readonly status: number | undefined, message: string, readonly body?: unknown) {
    super(message);
  }
}

export interface ApiProject {
  id: number;
  name: string;
  token: string;
  org_id?: number | null;
  managed_by?: string | null;
  retention_days?: number | null;
  rate_limit?: { requestsPer10Seconds: number } | null;
}

/** What a Project sets on its project besides the name (null: the service's default). */
export interface ProjectLimits {
  retentionDays: number | null;
  rateLimit: { requestsPer10Seconds: number } | null;
}

export interface ApiOrg {
  id: number;
  name: string;
  monthly_event_quota: number | null;
  managed_by?: string | null;
  members_managed_by?: string | null;
  /** The namespaces the managing Organization lists (absent from a service that predates them). */
  namespaces?: string[] | null;
}

export interface ApiMember { email: string; role: string; source?: 'invite' | 'group' }

export interface ApiUsage { org_id: number; name: string; month: string; events: number; monthly_event_quota: number | null }

export interface ApiMachineToken {
  id: number;
  name: string;
  role: string;
  token?: string;
  managed_by?: string | null;
}

export interface ApiFlag {
  id: number;
  project_id: number;
  key: string;
  name: string;
  description: string | null;
  active: boolean;
  type: string;
  variants: unknown[];
  rules: unknown[];
  archived_at: number | null;
  managed_by?: string | null;
}

export interface FlagBody {
  key: string;
  name: string;
  description: string | null;
  active: boolean;
  type: string;
  variants: unknown[];
  rules: unknown[];
}

export class TallyApi {
  /** Called with each request's outcome (for metrics). */
  onRequest?: (method: string, status: number | 'error') => void;

  constructor(private readonly baseUrl: string, private readonly key: string, private readonly timeoutMs: number) {}

  /**
   * One request: `resource` (when given) goes as X-Tally-Resource; an answer that is not 2xx throws
   * an ApiError of its kind. A kind with calls of its own builds them on this (kinds/<kind>-api.ts).
   */
  async call<T>(method: string, path: string, resource: string | undefined, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}`, accept: 'application/json' };
    if (resource) headers['x-tally-resource'] = resource;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(this.baseUrl + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      this.onRequest?.(method, 'error');
      throw new ApiError('unavailable', undefined, `${method} ${path}: ${err instanceof Error ? err.message : String(err)}`);
    }
    this.onRequest?.(method, res.status);
    const text = await res.text().catch(() => '');
    let parsed: unknown = text;
    try { parsed = text ? JSON.parse(text) : undefined; } catch { /* not JSON: keep the text */ }
    if (res.ok) return parsed as T;
    const message = errorMessage(parsed) ?? `HTTP ${res.status}`;
    const s = res.status;
    const boundary = s === 403 ? boundaryRefusal(parsed) : undefined;
    if (boundary) throw new ApiError('refused', s, boundary.message, parsed);
    const kind: ApiErrorKind = s === 404 ? 'not_found' : s === 409 ? 'conflict' : s === 400 || s === 422 ? 'invalid' : 'unavailable';
    throw new ApiError(kind, s, kind === 'unavailable' ? `${method} ${path}: HTTP ${s}: ${message}` : message, parsed);
  }

  // --- organisations ---

  /** `namespaces` undefined: not sent (a service that predates them). */
  createOrg(name: string, monthlyEventQuota: number | null, namespaces: string[] | undefined, resource: string): Promise<ApiOrg> {
    return this.call('POST', '/admin/orgs', resource, { name, monthlyEventQuota, namespaces });
  }

  async findOrg(resource: string): Promise<ApiOrg | undefined> {
    const list = await this.call<ApiOrg[]>('GET', `/admin/orgs?managedBy=${encodeURIComponent(resource)}`, undefined);
    return list.find((o) => o.managed_by === resource);
  }

  async getOrg(id: number): Promise<ApiOrg | undefined> {
    try {
      return await this.call<ApiOrg>('GET', `/admin/orgs/${id}`, undefined);
    } catch (err) {
      if (err instanceof ApiError && err.kind === 'not_found') return undefined;
      throw err;
    }
  }

  updateOrg(id: number, body: { name?: string; monthlyEventQuota?: number | null; namespaces?: string[] }, resource: string): Promise<ApiOrg> {
    return this.call('PATCH', `/admin/orgs/${id}`, resource, body);
  }

  adoptOrg(id: number, resource: string): Promise<ApiOrg> {
    return this.call('POST', `/admin/orgs/${id}/adopt`, resource);
  }

  releaseOrg(id: number, resource: string): Promise<unknown> {
    return this.call('POST', `/admin/orgs/${id}/release`, resource);
  }

  deleteOrg(id: number, resource: string): Promise<unknown> {
    return this.call('DELETE', `/admin/orgs/${id}`, resource);
  }

  listMembers(id: number): Promise<ApiMember[]> {
    return this.call('GET', `/admin/orgs/${id}/members`, undefined);
  }

  /** Replaces the invited memberships with `members` (group-derived ones stay) and owns the list. */
  putMembers(id: number, members: { email: string; role: string }[], resource: string): Promise<unknown> {
    return this.call('PUT', `/admin/orgs/${id}/members`, resource, { members });
  }

  /** Gives the membership list back to people. */
  releaseMembers(id: number, resource: string): Promise<unknown> {
    return this.call('DELETE', `/admin/orgs/${id}/members-management`, resource);
  }

  listGroups(id: number): Promise<{ name: string; role: string }[]> {
    return this.call('GET', `/admin/orgs/${id}/groups`, undefined);
  }

  putGroups(id: number, groups: { name: string; role: string }[], resource: string): Promise<unknown> {
    return this.call('PUT', `/admin/orgs/${id}/groups`, resource, { groups });
  }

  usage(month: string): Promise<ApiUsage[]> {
    return this.call('GET', `/admin/usage?month=${month}`, undefined);
  }

  // --- machine tokens ---

  createToken(orgId: number, name: string, role: string, resource: string): Promise<ApiMachineToken & { token: string }> {
    return this.call('POST', `/admin/orgs/${orgId}/tokens`, resource, { name, role });
  }

  listTokens(orgId: number, resource: string): Promise<ApiMachineToken[]> {
    return this.call('GET', `/admin/orgs/${orgId}/tokens?managedBy=${encodeURIComponent(resource)}`, undefined);
  }

  deleteToken(orgId: number, tokenId: number, resource: string): Promise<unknown> {
    return this.call('DELETE', `/admin/orgs/${orgId}/tokens/${tokenId}`, resource);
  }

  // --- projects ---

  createProject(organizationId: number, name: string, resource: string, limits?: Partial<ProjectLimits>): Promise<ApiProject> {
    return this.call('POST', `/admin/orgs/${organizationId}/projects`, resource, { name, ...limits });
  }

  adoptProject(id: number, resource: string): Promise<ApiProject> {
    return this.call('POST', `/api/projects/${id}/adopt`, resource);
  }

  updateProject(id: number, body: { name?: string } & Partial<ProjectLimits>, resource: string): Promise<ApiProject> {
    return this.call('PATCH', `/api/projects/${id}`, resource, body);
  }

  async findProject(resource: string): Promise<ApiProject | undefined> {
    const list = await this.call<ApiProject[]>('GET', `/api/projects?managedBy=${encodeURIComponent(resource)}`, undefined);
    return list.find((p) => p.managed_by === resource);
  }

  async getProject(id: number): Promise<ApiProject | undefined> {
    try {
      return await this.call<ApiProject>('GET', `/api/projects/${id}`, undefined);
    } catch (err) {
      if (err instanceof ApiError && err.kind === 'not_found') return undefined;
      throw err;
    }
  }

  renameProject(id: number, name: string, resource: string): Promise<ApiProject> {
    return this.call('PATCH', `/api/projects/${id}`, resource, { name });
  }

  deleteProject(id: number, resource: string): Promise<unknown> {
    return this.call('DELETE', `/api/projects/${id}`, resource);
  }

  releaseProject(id: number, resource: string): Promise<unknown> {
    return this.call('POST', `/api/projects/${id}/release`, resource);
  }

  setFlagSecret(projectId: number, secret: string, resource: string): Promise<unknown> {
    return this.call('PUT', `/api/projects/${projectId}/flag-secret`, resource, { secret });
  }

  revokeFlagSecret(projectId: number, resource: string): Promise<unknown> {
    return this.call('DELETE', `/api/projects/${projectId}/flag-secret`, resource);
  }

  // --- flags ---

  createFlag(projectId: number, body: FlagBody, resource: string): Promise<ApiFlag> {
    return this.call('POST', '/api/flags', resource, { projectId, ...body });
  }

  /** The flag a resource manages in a project, archived or not. */
  async findFlag(projectId: number, resource: string): Promise<ApiFlag | undefined> {
    const q = `projectId=${projectId}&managedBy=${encodeURIComponent(resource)}`;
    const live = await this.call<ApiFlag[]>('GET', `/api/flags?${q}`, undefined);
    const found = live.find((f) => f.managed_by === resource);
    if (found) return found;
    const archived = await this.call<ApiFlag[]>('GET', `/api/flags?${q}&archived=1`, undefined);
    return archived.find((f) => f.managed_by === resource);
  }

  async getFlag(id: number): Promise<ApiFlag | undefined> {
    try {
      return await this.call<ApiFlag>('GET', `/api/flags/${id}`, undefined);
    } catch (err) {
      if (err instanceof ApiError && err.kind === 'not_found') return undefined;
      throw err;
    }
  }

  updateFlag(id: number, body: Partial<FlagBody>, resource: string): Promise<ApiFlag> {
    return this.call('PUT', `/api/flags/${id}`, resource, body);
  }

  archiveFlag(id: number, resource: string): Promise<ApiFlag> {
    return this.call('POST', `/api/flags/${id}/archive`, resource);
  }

  reviveFlag(id: number, resource: string): Promise<ApiFlag> {
    return this.call('POST', `/api/flags/${id}/revive`, resource);
  }

  deleteFlag(id: number, resource: string): Promise<unknown> {
    return this.call('DELETE', `/api/flags/${id}`, resource);
  }

  releaseFlag(id: number, resource: string): Promise<unknown> {
    return this.call('POST', `/api/flags/${id}/release`, resource);
  }
}

/** The reasons of the service's boundary check that a 403 may carry (they become the Ready reason as they are). */
export const BOUNDARY_REASONS = ['AdoptionRefused', 'NamespaceNotAllowed', 'NotManaged'] as const;
export type BoundaryReason = (typeof BOUNDARY_REASONS)[number];

/** `403 {error: "forbidden", reason, message}` of the service's boundary check, or undefined. */
export function boundaryRefusal(body: unknown): { reason: BoundaryReason; message: string } | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const { reason, message } = body as { reason?: unknown; message?: unknown };
  if (!(BOUNDARY_REASONS as readonly unknown[]).includes(reason)) return undefined;
  return { reason: reason as BoundaryReason, message: typeof message === 'string' && message ? message : `refused by the service (${String(reason)})` };
}

function errorMessage(body: unknown): string | undefined {
  if (body && typeof body === 'object' && 'error' in body) {
    const { error, message } = body as { error: unknown; message?: unknown };
    if (typeof error === 'string') return typeof message === 'string' && message ? `${error}: ${message}` : error;
  }
  if (typeof body === 'string' && body) return body.slice(0, 500);
  return undefined;
}
