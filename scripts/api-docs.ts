/**
 * Renders docs/api.md, the HTTP API reference, from the routes' own declarations: the service's
 * route list and the OpenAPI document it serves at `GET /openapi.json`, both built in-process on
 * throwaway embedded stores. `npm run docs:api` rewrites the file; `--check` exits 1 when the
 * file differs (test/unit/api-docs.test.ts runs the same comparison).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../apps/server/src/config.js';
import { buildDeps, startService } from '../apps/server/src/app.js';
import { allRoutes } from '../apps/server/src/routes.js';
import { LIMITS } from '../apps/server/src/limits.js';
import { envelopeOf, openApiDocument, type AuthKind, type RouteSpec } from '../apps/server/src/http/route.js';

export const API_DOC = fileURLToPath(new URL('../docs/api.md', import.meta.url));

type Schema = Record<string, any>;

/** Who may call a route, by its declaration's `auth` kind (apps/server/src/http/route.ts). */
const AUTH: Record<AuthKind, string> = {
  none: 'none',
  api: '`Authorization: Bearer` ID token of a member, machine-access token or superadmin key',
  account: 'like `api`, also users without an organisation',
  admin: 'superadmin key only',
  projectToken: 'project token: header `X-Service-Token`, or a record\'s own `token` (which wins)',
  flagSecret: 'flag secret as `Authorization: Bearer`',
};

/** The route list and OpenAPI document of the service as it is built now. */
export async function currentApi(): Promise<{ routes: RouteSpec[]; openapi: Schema }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-api-docs-'));
  try {
    const config = loadConfig({ DATA_DIR: dir, SUPERADMIN_KEY: 'docs', LOG_LEVEL: 'silent' });
    const deps = await buildDeps(config);
    // No role: nothing listens and no worker runs; close() releases the stores.
    const svc = await startService(deps, { roles: [] });
    try {
      const routes = allRoutes(deps);
      return { routes, openapi: openApiDocument(routes, deps.version) as Schema };
    } finally {
      await svc.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Readers' names of the constants in apps/server/src/limits.ts (a new one shows its key until named here). */
const LIMIT_LABELS: Record<string, string> = {
  ingestionBatchRecords: 'records per ingestion batch (more: `400 batch too large`)',
  requestBodyBytes: 'request body, bytes (more: `413 payload too large`)',
  jsonNestingDepth: 'nesting levels of a JSON body (more: `400 invalid json`)',
  rateLimitPerIp: 'ingestion requests per IP (`429`, `Retry-After`)',
  rateLimitPerProject: 'ingestion requests per project (`429`, `Retry-After`)',
  queryRate: '`/api/query/*` per credential and project (token bucket)',
  flagsEvaluateRate: '`/flags/evaluate` and `GET /flags` per project token (token bucket)',
  flagsLocalRate: '`/flags/local-evaluation` per flag secret (token bucket)',
  retryAfterMinSeconds: 'least `Retry-After`, seconds',
  quotaRetryAfterSeconds: '`Retry-After` of the monthly quota refusal, seconds',
  flagsPerProject: 'flags per project, archived ones included (more: `409 flag limit reached`)',
  variantsPerFlag: 'variants per flag',
  rulesPerFlag: 'rules per flag',
  overrideIdsPerRule: 'override ids per rule',
  overrideIdLength: 'override id length',
  flagKeyLength: 'flag key length',
  metricsPerExperiment: 'metrics per experiment',
  experimentWindowHours: 'longest metric window of an experiment (hours)',
  variantKeyLength: 'variant key length',
  filtersPerQuery: 'filters per query',
  funnelSteps: 'funnel steps',
  funnelWindowDays: 'funnel `windowDays`',
  retentionBuckets: 'retention buckets',
  flowsSteps: 'flows steps',
  flowsLimit: 'flows paths (`limit`)',
  cohortCriteria: 'cohort criteria',
  cohortBehaviorCount: 'cohort behaviour `count`',
  cohortBehaviorWindowDays: 'cohort behaviour `windowDays`',
  cohortPreviewSample: 'ids in a cohort preview sample',
  cohortStaticIds: 'distinct ids the `static` criteria of one cohort list, in all',
  cohortStaticIdsChars: 'characters of those ids, in all',
  drilldownPageLimit: 'drill-down page `limit`',
  queryMaxCells: 'series × buckets of one answer (`QUERY_MAX_CELLS`; more: `400 query too large`)',
  queryMaxRows: 'rows one engine answer may hand to the service (`QUERY_MAX_ROWS`)',
  queryTimeoutMs: 'statement timeout of an event-store read, ms (`QUERY_TIMEOUT_MS`)',
  queryMaxMemoryMb: 'memory of one query, MB (`QUERY_MAX_MEMORY_MB`)',
  irBreakdownSegments: 'Query IR breakdown segments',
  flagAuditLimit: 'flag audit page `limit`',
  dataEventsLimit: '`GET /api/data/events` `limit`',
};

function limitValue(v: unknown): string {
  if (typeof v === 'number') return v.toLocaleString('en-US');
  const o = v as Record<string, number>;
  if ('requests' in o) return `${o.requests.toLocaleString('en-US')} per ${o.windowMs / 1000} s`;
  if ('perSecond' in o) return `${o.perSecond.toLocaleString('en-US')}/s, bursts of ${o.burst.toLocaleString('en-US')}`;
  const n = (x: number) => x.toLocaleString('en-US');
  const range = o.min !== undefined ? `${n(o.min)}..${n(o.max)}` : `at most ${n(o.max)}`;
  return o.default !== undefined ? `${range}, default ${o.default}` : range;
}

const refName = (ref: string) => ref.split('/').pop()!;

function bounds(s: Schema): string {
  const lo = s.minimum ?? s.exclusiveMinimum ?? s.minLength ?? s.minItems;
  let hi = s.maximum ?? s.exclusiveMaximum ?? s.maxLength ?? s.maxItems;
  if (hi === Number.MAX_SAFE_INTEGER) hi = undefined; // zod's .int() bound says nothing to a reader
  if (lo === undefined && hi === undefined) return '';
  if (lo !== undefined && hi !== undefined) return lo === hi ? `(${lo})` : `(${lo}..${hi})`;
  return lo !== undefined ? `(≥${lo})` : `(≤${hi})`;
}

/** A schema in brief, TypeScript-like; objects longer than a line are spread over lines. */
function shape(s: Schema | undefined, indent = ''): string {
  if (!s || Object.keys(s).length === 0) return 'any';
  if (s.$ref) return refName(s.$ref);
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v: unknown) => JSON.stringify(v)).join(' | ');
  const union = s.anyOf ?? s.oneOf;
  if (union) return withDefault(s, union.map((u: Schema) => shape(u, indent)).join(' | '));
  if (s.allOf) return s.allOf.map((u: Schema) => shape(u, indent)).join(' & ');
  if (Array.isArray(s.type)) {
    return s.type.map((t: string) => (t === 'null' ? 'null' : shape({ ...s, type: t }, indent))).join(' | ');
  }
  switch (s.type) {
    case 'array': {
      const item = shape(s.items, indent);
      const b = s.minItems !== undefined || s.maxItems !== undefined ? bounds({ minItems: s.minItems, maxItems: s.maxItems }) : '';
      const it: Schema = s.items ?? {};
      const several = it.anyOf || it.oneOf || it.allOf || Array.isArray(it.type) || (it.enum && it.enum.length > 1);
      return withDefault(s, `${several ? `(${item})` : item}[]${b}`);
    }
    case 'object':
      return object(s, indent);
    case 'string':
      return withDefault(s, `string${s.format ? `<${s.format}>` : ''}${bounds(s)}`);
    case 'integer':
    case 'number':
      return withDefault(s, `${s.type}${bounds(s)}`);
    default:
      return withDefault(s, s.type ?? 'any');
  }
}

const withDefault = (s: Schema, text: string) => (s.default !== undefined ? `${text} = ${JSON.stringify(s.default)}` : text);

function object(s: Schema, indent: string): string {
  const props: Record<string, Schema> = s.properties ?? {};
  const required = new Set<string>(s.required ?? []);
  const extra = s.additionalProperties;
  const open = extra === true || (typeof extra === 'object' && Object.keys(extra).length === 0);
  const names = Object.keys(props);
  if (names.length === 0) {
    if (typeof extra === 'object' && Object.keys(extra).length > 0) return `{[key: string]: ${shape(extra, indent)}}`;
    return 'object';
  }
  const member = (n: string, ind: string) => `${/^[A-Za-z_$][\w$]*$/.test(n) ? n : JSON.stringify(n)}${required.has(n) ? '' : '?'}: ${shape(props[n], ind)}`;
  const rest = open ? ', …' : '';
  const inline = `{${names.map((n) => member(n, indent)).join(', ')}${rest}}`;
  if (inline.length + indent.length <= 100 && !inline.includes('\n')) return inline;
  const inner = indent + '  ';
  return `{\n${names.map((n) => `${inner}${member(n, inner)},`).join('\n')}${open ? `\n${inner}…` : ''}\n${indent}}`;
}

/** One route's request and response shapes. */
function operation(op: Schema, r: RouteSpec): string[] {
  const out: string[] = [];
  const params: Schema[] = op.parameters ?? [];
  for (const where of ['path', 'query'] as const) {
    const ps = params.filter((p) => p.in === where);
    if (ps.length === 0) continue;
    const fields = ps.map((p) => `${p.name}${p.required ? '' : '?'}: ${shape(p.schema)}`);
    out.push(block(where, `{${fields.join(', ')}}`));
  }
  const body = op.requestBody?.content?.['application/json']?.schema;
  if (body) out.push(block('body', shape(body)));
  else if (r.rawBody) out.push('- body: read by the handler itself (JSON, form-encoded `data=`, or base64 as Mixpanel sends it)');
  for (const [status, res] of Object.entries<Schema>(op.responses ?? {})) {
    const schema = res.content?.['application/json']?.schema;
    out.push(schema ? block(status, shape(schema)) : `- ${status}: no JSON shape declared`);
  }
  return out;
}

function block(label: string, text: string): string {
  if (!text.includes('\n')) return `- ${label}: \`${text}\``;
  return `- ${label}:\n\n  \`\`\`ts\n${text.split('\n').map((l) => `  ${l}`).join('\n')}\n  \`\`\``;
}

const anchor = (heading: string) => heading.toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');

/** The whole reference as markdown. */
export function renderApiReference(routes: RouteSpec[], openapi: Schema): string {
  const tags: string[] = [];
  for (const r of routes) if (!tags.includes(r.tag)) tags.push(r.tag);
  const lines: string[] = [
    '# HTTP API reference',
    '',
    '<!-- Generated by `npm run docs:api` from the routes\' declarations; edit those, not this file. -->',
    '',
    'Every route the service serves, from the same zod schemas that validate requests and produce',
    'the OpenAPI 3.1 document at `GET /openapi.json`. Shapes are written in brief: `name?:` is an',
    'optional member, `(1..200)` a length or value range, `= x` a default, `…` an object that takes',
    'members not listed; a named shape is spelled out under [Shapes](#shapes).',
    '',
    'Bodies are JSON. Times are integer Unix milliseconds; dates in query bodies are ISO 8601',
    'calendar dates; calendar buckets are UTC. Errors answer `{error, code?, message?}`, or',
    '`{status: 0, error}` where a route says `errors: status` (the SDK-facing routes); a validation',
    'error names the member (`400 {error: "<path>: <problem>", code: "validation_failed"}`).',
    'Resources of another organisation answer `404`.',
    '',
    '| credential (`auth`) | who may call |',
    '|---|---|',
    ...(Object.keys(AUTH) as AuthKind[]).map((k) => `| \`${k}\` | ${AUTH[k]} |`),
    '',
    'Within `api`, roles narrow further (viewer reads and queries; member writes; admin manages projects',
    'and members; owner everything): see [decisions.md](decisions.md#organisations-users-and-roles).',
    '',
    tags.map((t) => `[${t}](#${anchor(t)})`).join(' · ') + ' · [Limits](#limits) · [Shapes](#shapes)',
    '',
    '## Common rules',
    '',
    '- **Project**: routes inside a project take `projectId` (a query parameter; a body member on the',
    '  query endpoints). A user credential must name one of its organisation\'s projects (`403`',
    '  otherwise) and defaults to the oldest; the superadmin key defaults to the installation\'s',
    '  oldest project. Details: [decisions.md](decisions.md#which-project-a-request-acts-in).',
    '- **Credentials**: a missing or bad `/api/*` or `/admin/*` credential answers `401 unauthorized`;',
    '  a role too low, another project or no organisation `403`; a bad project token',
    '  `401 {status: 0, error: "invalid token"}`; a bad or revoked flag secret `401 invalid flag secret`.',
    '  The flag secret is accepted on `GET /flags/local-evaluation` only, and only it is accepted there.',
    '- **Ingestion** (`/track`, `/engage`, `/alias`, also under `/v/0.14/`): a batch past a rate limit',
    '  or past the organisation\'s monthly quota is refused whole (nothing stored) and can be retried',
    '  unchanged after `Retry-After`; rules in [ingestion.md](ingestion.md).',
    '- **Query IR**: an invalid document answers `400 {error: "invalid query", errors: [{path, message,',
    '  code?}]}`; older versions are upgraded, not refused; `retention` and `flows` answer `501`',
    '  ([query-ir.md](query-ir.md)).',
    '- **Flags**: lifecycle, audit actions and validation messages in [flags.md](flags.md).',
    '',
  ];
  for (const tag of tags) {
    lines.push(`## ${tag}`, '');
    for (const r of routes.filter((x) => x.tag === tag)) {
      const op = openapi.paths?.[r.path]?.[r.method] ?? {};
      lines.push(`### \`${r.method.toUpperCase()} ${r.path}\``, '', r.summary, '', `- auth: \`${r.auth}\`${envelopeOf(r) === 'status' ? ', errors: `status`' : ''}`, ...operation(op, r), '');
    }
  }
  lines.push('## Limits', '', 'Named constants of `apps/server/src/limits.ts`; the rate and query bounds are defaults of the',
    'variables in the [README](../README.md#configuration).', '', '| limit | value |', '|---|---|');
  for (const [key, value] of Object.entries(LIMITS)) lines.push(`| ${LIMIT_LABELS[key] ?? `\`${key}\``} | ${limitValue(value)} |`);
  lines.push('');
  lines.push('## Shapes', '');
  const schemas: Record<string, Schema> = openapi.components?.schemas ?? {};
  for (const name of Object.keys(schemas).sort((a, b) => a.localeCompare(b))) {
    const s = schemas[name];
    lines.push(`### ${name}`, '');
    if (s.description) lines.push(s.description, '');
    lines.push('```ts', shape(s), '```', '');
  }
  return lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}

async function main() {
  const { routes, openapi } = await currentApi();
  const text = renderApiReference(routes, openapi);
  if (process.argv.includes('--check')) {
    const current = fs.existsSync(API_DOC) ? fs.readFileSync(API_DOC, 'utf8') : '';
    if (current !== text) {
      console.error('docs/api.md is out of date with the routes: run `npm run docs:api`');
      process.exit(1);
    }
    console.log('docs/api.md is up to date');
    return;
  }
  fs.writeFileSync(API_DOC, text);
  console.log(`wrote ${path.relative(process.cwd(), API_DOC)}: ${routes.length} routes`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
}
