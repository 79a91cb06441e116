import { session, setSession } from './session.js';
import { navigate } from './router.js';
import type {
  Account, Board, BoardCardWrite, BoardListItem, BoardRun, Cohort, DateRangeSpec, DrilldownPage, DrilldownSelection, EventNameCount,
  IrFunnelResult, LexiconEvent, LexiconProperty, Project, PropertyFilter, PropertySummary, QueryV2, ReportRun, ReportType,
  SavedReport, TrendResult,
} from './types.js';

/**
 * The one place the console talks to the API: every call carries the session's bearer
 * credential (and the chosen organisation), answers are typed with the server's schemas, and
 * an error keeps the API's own words (`message`, else `error`) so pages show them as they are.
 */
export class ApiError extends Error {
  constructor(readonly status: number, readonly error: string, message?: string, readonly details?: Array<{ path: string; message: string }>) {
    super(message ?? error);
  }
}

/** The path a 401 interrupted, so signing in again returns to it. */
export const RETURN_KEY = 'tally.return';

export function signOut(returnTo?: string) {
  setSession(null);
  if (returnTo) sessionStorage.setItem(RETURN_KEY, returnTo);
  navigate('/sign-in', { replace: true });
}

export async function request<T>(method: string, path: string, body?: unknown, opts: { raw?: boolean } = {}): Promise<T> {
  const s = session();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (s) headers.authorization = `Bearer ${s.token}`;
  if (s?.orgId !== undefined) headers['x-tally-organization'] = String(s.orgId);
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, 'network error', 'The API could not be reached: check the connection and retry.');
  }
  if (res.status === 401 && s) {
    // An expired or revoked credential: back to sign-in, then back here.
    signOut(location.pathname + location.search);
    throw new ApiError(401, 'unauthorized', 'Your session ended: sign in again.');
  }
  if (opts.raw && res.ok) return (await res.text()) as T;
  const text = await res.text();
  let data: any;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) throw apiError(res.status, data);
  return data as T;
}

/** The API's error answer (`{error, message?, errors?}`) as an ApiError in its own words. */
function apiError(status: number, data: any): ApiError {
  const error = typeof data?.error === 'string' ? data.error : `HTTP ${status}`;
  const details = Array.isArray(data?.errors) ? data.errors : undefined;
  const message = typeof data?.message === 'string' ? joinError(error, data.message) : details?.length ? `${error}: ${details.map((d: any) => `${d.path || 'query'}: ${d.message}`).join('; ')}` : error;
  return new ApiError(status, error, message, details);
}

export type BoardRunBody = { date_range?: DateRangeSpec | null; filters?: PropertyFilter[]; replace_filters?: boolean; refresh?: boolean; card_id?: number };
/** One line of a streamed board run (POST /api/boards/{id}/run with `Accept: application/x-ndjson`). */
export type BoardStreamLine =
  | { kind: 'board'; board: Board; range: BoardRun['range']; ran_at: number; refresh?: BoardRun['refresh'] }
  | { kind: 'card'; card: CardRunAnswer }
  | { kind: 'done'; board_id: number; range: BoardRun['range']; ran_at: number; cards: number; errors: number; refresh?: BoardRun['refresh'] }
  | { kind: 'error'; error: { status: number; error: string; message?: string } };

/**
 * A board run as a stream: `onLine` gets each line the moment it arrives (the board first, then
 * each card as it finishes, then a summary). Resolves when the stream ends; an answer refused
 * before it starts (404, 429…) throws its ApiError, as `request` does. `quiet`: a refused
 * session only throws (the caller is not the page on screen).
 */
export async function runBoardStream(boardId: number | string, body: BoardRunBody, onLine: (line: BoardStreamLine) => void, opts: { signal?: AbortSignal; quiet?: boolean } = {}): Promise<void> {
  const s = session();
  const headers: Record<string, string> = { accept: 'application/x-ndjson', 'content-type': 'application/json' };
  if (s) headers.authorization = `Bearer ${s.token}`;
  if (s?.orgId !== undefined) headers['x-tally-organization'] = String(s.orgId);
  let res: Response;
  try {
    res = await fetch(`/api/boards/${boardId}/run`, { method: 'POST', headers, body: JSON.stringify(body), signal: opts.signal });
  } catch (e) {
    if (opts.signal?.aborted) throw e;
    throw new ApiError(0, 'network error', 'The API could not be reached: check the connection and retry.');
  }
  if (res.status === 401 && s && !opts.quiet) {
    signOut(location.pathname + location.search);
    throw new ApiError(401, 'unauthorized', 'Your session ended: sign in again.');
  }
  if (!res.ok || !res.body) {
    const text = await res.text();
    let data: any;
    try {
      data = text ? JSON.parse(text) : undefined;
    } catch {
      data = undefined;
    }
    throw apiError(res.status, data);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) rest += value;
    let nl: number;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl).trim();
      rest = rest.slice(nl + 1);
      if (line) onLine(JSON.parse(line) as BoardStreamLine);
    }
    if (done) break;
  }
  if (rest.trim()) onLine(JSON.parse(rest) as BoardStreamLine);
}

/** `not found` + `report not found` → `report not found`; `invalid report query` + `from: …` → both (the message alone may lack the reason). */
export const joinError = (error: string, message?: string) =>
  // An error that already carries its detail (`query too large: 1 series × …`) is shown alone.
  !message || error.includes(message) || error.includes(': ') ? error : message.toLowerCase().startsWith(error.toLowerCase()) ? message : `${error}: ${message}`;

/** `?a=1&b=2` from the parameters that are set (`''` when none is). */
export const queryString = (params: Record<string, string | number | undefined>) => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
};

export type OneOf<T> = T;
export type CardRunAnswer = BoardRun['cards'][number];

export const api = {
  account: () => request<Account>('GET', '/api/account'),
  projects: () => request<Project[]>('GET', '/api/projects'),

  boards: (projectId: string) => request<BoardListItem[]>('GET', `/api/boards${queryString({ projectId })}`),
  board: (id: string | number) => request<Board>('GET', `/api/boards/${id}`),
  createBoard: (projectId: string, name: string) => request<Board>('POST', `/api/boards${queryString({ projectId })}`, { name }),
  updateBoard: (id: number, patch: { name?: string; date_range?: DateRangeSpec | null; filters?: PropertyFilter[]; cards?: BoardCardWrite[]; version?: number }) =>
    request<Board>('PUT', `/api/boards/${id}`, patch),
  createBoardWith: (projectId: string, b: { name: string; date_range?: DateRangeSpec | null; filters?: PropertyFilter[]; cards?: BoardCardWrite[] }) =>
    request<Board>('POST', `/api/boards${queryString({ projectId })}`, b),
  deleteBoard: (id: number) => request<{ ok: true }>('DELETE', `/api/boards/${id}`),
  /** One card with the board's saved range and filters. */
  /** Every card with a range or filters for this run only (a viewer's unsaved choice). */
  runBoard: (boardId: number, body: BoardRunBody) => request<BoardRun>('POST', `/api/boards/${boardId}/run`, body),
  cardCsv: (boardId: number, cardId: number) => request<string>('GET', `/api/boards/${boardId}/run${queryString({ format: 'csv', cardId })}`, undefined, { raw: true }),

  reports: (projectId: string) => request<SavedReport[]>('GET', `/api/reports${queryString({ projectId })}`),
  report: (id: string | number) => request<SavedReport>('GET', `/api/reports/${id}`),
  createReport: (projectId: string, r: { name: string; description?: string | null; type: ReportType; query: Record<string, unknown> }) =>
    request<SavedReport>('POST', `/api/reports${queryString({ projectId })}`, r),
  updateReport: (id: number, r: { name?: string; description?: string | null; type?: ReportType; query?: Record<string, unknown> }) =>
    request<SavedReport>('PUT', `/api/reports/${id}`, r),
  deleteReport: (id: number) => request<{ ok: true }>('DELETE', `/api/reports/${id}`),
  runReport: (id: number) => request<ReportRun>('POST', `/api/reports/${id}/run`),

  query: (projectId: string, query: QueryV2) => request<TrendResult | IrFunnelResult>('POST', '/api/query', { projectId, query }),
  drilldown: (projectId: string, query: QueryV2, selection: DrilldownSelection, page = { limit: 50, offset: 0 }) =>
    request<DrilldownPage>('POST', '/api/query/drilldown', { projectId, query, selection, page }),
  /** The v0 analyses the IR endpoint does not execute (retention, flows, sessions). */
  v0: <T>(kind: 'retention' | 'flows' | 'sessions', projectId: string, body: Record<string, unknown>) =>
    request<T>('POST', `/api/query/${kind}`, { ...body, projectId }),

  lexiconEvents: (projectId: string) => request<LexiconEvent[]>('GET', `/api/lexicon/events${queryString({ projectId })}`),
  lexiconProperties: (projectId: string) => request<LexiconProperty[]>('GET', `/api/lexicon/properties${queryString({ projectId })}`),
  eventNames: (projectId: string) => request<EventNameCount[]>('GET', `/api/data/event-names${queryString({ projectId })}`),
  properties: (projectId: string, event?: string) => request<PropertySummary[]>('GET', `/api/data/properties${queryString({ projectId, event })}`),
  cohorts: (projectId: string) => request<Cohort[]>('GET', `/api/cohorts${queryString({ projectId })}`),
};
