/**
 * Renders docs/api.md, the HTTP API reference, from the routes' own declarations: the service's
 * route list and the OpenAPI document it serves at `GET /openapi.json`, both built in-process on
 * throwaway embedded stores. `npm run docs:api` rewrites the file; `--check` exits 1 when the
 * file differs (test/api-docs.test.ts runs the same comparison).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../apps/server/src/config.js';
import { buildDeps, startService } from '../apps/server/src/app.js';
import { allRoutes } from '../apps/server/src/routes.js';
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
    tags.map((t) => `[${t}](#${anchor(t)})`).join(' · ') + ' · [Shapes](#shapes)',
    '',
  ];
  for (const tag of tags) {
    lines.push(`## ${tag}`, '');
    for (const r of routes.filter((x) => x.tag === tag)) {
      const op = openapi.paths?.[r.path]?.[r.method] ?? {};
      lines.push(`### \`${r.method.toUpperCase()} ${r.path}\``, '', r.summary, '', `- auth: \`${r.auth}\`${envelopeOf(r) === 'status' ? ', errors: `status`' : ''}`, ...operation(op, r), '');
    }
  }
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
