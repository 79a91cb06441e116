import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { parseAllDocuments, stringify } from 'yaml';
import { KubeConfig } from '@kubernetes/client-node';
import { admitByPolicies, type UserInfo } from './admission.js';
import { Api, PATCH_TYPES, type DeleteOptions } from './api.js';
import { discovery } from './discovery.js';
import { allows, forbidden, type Grant } from './rbac.js';
import { fieldSelector, labelSelector } from './selectors.js';
import { status as statusObject, typeKeyOf, type Watcher } from './store.js';
import { toTable, wantsTable, type IncludeObject } from './tables.js';
import { KubeError, badRequest, gvOf, qualifiedName, type KubeObject, type ResourceType } from './types.js';

/**
 * An in-process Kubernetes API server for tests: plain HTTP on 127.0.0.1 speaking the REST
 * protocol (discovery, CRUD, watch streams, Status errors), so @kubernetes/client-node and the
 * real kubectl both use it through a kubeconfig it writes. See README.md for what it covers.
 * Longer than most files because it is the one HTTP surface: routing, RBAC, faults, list, watch.
 */

export interface FakeKubeOptions {
  /** Changes kept for watches to resume from; older resourceVersions get `410 Expired`. */
  historyLimit?: number;
  /** CRDs installed at start: the repo's crds/ (default), a list of objects, or none. */
  crds?: 'repo' | KubeObject[] | false;
  /** How often a watch with allowWatchBookmarks gets a BOOKMARK (a real server: about a minute). */
  bookmarkIntervalMs?: number;
}

export interface RequestRecord {
  method: string;
  path: string;
  query: string;
  user: string;
  verb?: string;
  contentType?: string;
  status: number;
}

export interface FailRule {
  remaining: number;
  status: number;
  message: string;
  match?: (req: { method: string; path: string; verb?: string; watch: boolean }) => boolean;
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const ADMIN = 'admin';

export async function readRepoCrds(): Promise<KubeObject[]> {
  const dir = join(repoRoot, 'crds');
  const out: KubeObject[] = [];
  for (const file of (await readdir(dir)).sort()) {
    if (!file.endsWith('.yaml') || file === 'kustomization.yaml') continue;
    for (const doc of parseAllDocuments(await readFile(join(dir, file), 'utf8'))) {
      const obj = doc.toJS();
      if (obj?.kind === 'CustomResourceDefinition') out.push(obj);
    }
  }
  return out;
}

interface Target {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

export class FakeKube {
  readonly api: Api;
  readonly requests: RequestRecord[] = [];
  private server!: Server;
  url = '';
  private readonly rbac = new Map<string, Grant[]>();
  private readonly groups = new Map<string, string[]>();
  private readonly failRules: FailRule[] = [];
  private watchesHang = false;
  private readonly hangRules = new Set<NonNullable<FailRule['match']>>();
  private readonly hungResponses = new Set<ServerResponse>();
  private readonly watchCleanups = new Set<() => void>();
  private tmp?: string;
  private readonly bookmarkIntervalMs: number;

  private constructor(opts: FakeKubeOptions) {
    this.api = new Api(opts.historyLimit ?? 1000);
    this.bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 1000;
  }

  static async start(opts: FakeKubeOptions = {}): Promise<FakeKube> {
    const fake = new FakeKube(opts);
    const crdType = fake.api.findType('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')!;
    const crds = opts.crds === false ? [] : opts.crds === undefined || opts.crds === 'repo' ? await readRepoCrds() : opts.crds;
    for (const crd of crds) fake.api.create(crdType, undefined, crd);
    fake.server = createServer((req, res) => {
      fake.handle(req, res).catch((err) => fake.sendError(res, err));
    });
    fake.server.keepAliveTimeout = 1000;
    await new Promise<void>((ok) => fake.server.listen(0, '127.0.0.1', ok));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  async stop(): Promise<void> {
    this.closeWatches();
    for (const r of this.hungResponses) r.destroy();
    this.api.close();
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
    if (this.tmp) await rm(this.tmp, { recursive: true, force: true });
  }

  // ---- clients ----

  /**
   * Where `user`'s requests go. kubectl sends no credentials over plain HTTP, so a user other than
   * the administrator is told apart by a path prefix of the server URL (clients keep a server's
   * path: `https://host/prefix` is how proxies serve clusters too).
   */
  serverUrl(user = ADMIN): string {
    return user === ADMIN ? this.url : `${this.url}/u/${Buffer.from(user).toString('base64url')}`;
  }

  /** A kubeconfig for `user` (default: an administrator RBAC never refuses). */
  kubeconfigYaml(user = ADMIN, namespace = 'default'): string {
    return stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'fake', cluster: { server: this.serverUrl(user), 'insecure-skip-tls-verify': true } }],
      users: [{ name: user, user: {} }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user, namespace } }],
      'current-context': 'fake',
    });
  }

  /** Writes the kubeconfig to a file (for KUBECONFIG and kubectl) and returns its path. */
  async kubeconfigFile(user = ADMIN, namespace = 'default'): Promise<string> {
    this.tmp ??= await mkdtemp(join(tmpdir(), 'fake-kube-'));
    const path = join(this.tmp, `kubeconfig-${Buffer.from(`${user}/${namespace}`).toString('hex')}.yaml`);
    await writeFile(path, this.kubeconfigYaml(user, namespace));
    return path;
  }

  kubeConfig(user = ADMIN, namespace = 'default'): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromString(this.kubeconfigYaml(user, namespace));
    return kc;
  }

  /** From now on `user`'s requests must fall inside these grants, or get 403. */
  enforceRbac(user: string, grants: Grant[]): void {
    this.rbac.set(user, grants);
  }

  /** The groups `user` is in, as admission policies see them (`request.userInfo.groups`). */
  setGroups(user: string, groups: string[]): void {
    this.groups.set(user, groups);
  }

  /**
   * Who a user is to admission: the administrator is in system:masters, a ServiceAccount's
   * username (`system:serviceaccount:<ns>:<name>`) in its groups, everyone in system:authenticated.
   */
  userInfo(user: string): UserInfo {
    const sa = /^system:serviceaccount:([^:]+):[^:]+$/.exec(user);
    const groups = user === ADMIN ? ['system:masters'] : sa ? ['system:serviceaccounts', `system:serviceaccounts:${sa[1]}`] : this.groups.get(user) ?? [];
    return { username: user, groups: [...groups, 'system:authenticated'] };
  }

  // ---- faults ----

  /** Ends every open watch stream now (clients see a normal end of stream). */
  closeWatches(): void {
    for (const cleanup of [...this.watchCleanups]) cleanup();
  }

  /** Forgets the change history: resuming from any earlier resourceVersion gets `410 Expired`. */
  expireHistory(): void {
    this.api.store.expireHistory();
  }

  /** The next `count` requests (matching `match`, if given) get `status` with a Status body. */
  failNext(count: number, status: number, opts: { message?: string; match?: FailRule['match'] } = {}): void {
    this.failRules.push({ remaining: count, status, message: opts.message ?? `injected failure (${status})`, match: opts.match });
  }

  /**
   * Requests matching `match` get no answer at all (the connection stays open, as with a hung API
   * server) until the returned function is called, which also drops the connections left hanging.
   */
  hangRequests(match: NonNullable<FailRule['match']>): () => void {
    this.hangRules.add(match);
    return () => {
      this.hangRules.delete(match);
      for (const r of this.hungResponses) r.destroy();
      this.hungResponses.clear();
    };
  }

  /** Drops every pending `failNext` (ends an outage made with `failNext(Infinity, 503)`). */
  clearFaults(): void {
    this.failRules.length = 0;
  }

  /** An object as stored (no HTTP, no RBAC): for assertions. Undefined when absent. */
  stored(group: string, plural: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.api.store.get(`${group}/${plural}`, namespace, name);
  }

  /** Objects of a type as stored, in one namespace or all. */
  storedList(group: string, plural: string, namespace?: string): KubeObject[] {
    return this.api.store.list(`${group}/${plural}`, namespace);
  }

  /** Open and new watches go silent (connection open, no events, no bookmarks) until `restoreWatches`. */
  hangWatches(): void {
    this.watchesHang = true;
    for (const w of this.api.store.watchers) w.hung = true;
  }

  /** New watches work again (watches that hung stay silent, like a dead connection). */
  restoreWatches(): void {
    this.watchesHang = false;
  }

  get openWatches(): number {
    return [...this.api.store.watchers].filter((w) => !w.hung).length;
  }

  // ---- HTTP ----

  private sendJson(res: ServerResponse, code: number, body: unknown): void {
    if (res.headersSent) return void res.end();
    res.writeHead(code, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
    res.end(JSON.stringify(body));
  }

  private sendError(res: ServerResponse, err: unknown): void {
    const e = err instanceof KubeError ? err : new KubeError(500, 'InternalError', `Internal error occurred: ${(err as Error)?.message ?? String(err)}`);
    this.sendJson(res, e.code, e.toStatus());
  }


  private resolveTarget(path: string): Target | undefined {
    const parts = path.split('/').filter(Boolean);
    let group: string;
    let version: string;
    let rest: string[];
    if (parts[0] === 'api' && parts.length >= 3) [group, version, rest] = ['', parts[1], parts.slice(2)];
    else if (parts[0] === 'apis' && parts.length >= 4) [group, version, rest] = [parts[1], parts[2], parts.slice(3)];
    else return undefined;
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const type = this.api.findType(group, version, rest[0]);
    if (!type || rest.length > 3) return undefined;
    if (type.namespaced !== (namespace !== undefined) && !(type.namespaced && rest.length === 1)) return undefined;
    return { type, namespace, name: rest[1], subresource: rest[2] };
  }

  private verbOf(method: string, target: Target, watch: boolean): string {
    if (method === 'GET') return target.name ? (watch ? 'watch' : 'get') : watch ? 'watch' : 'list';
    return { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: target.name ? 'delete' : 'deletecollection' }[method] ?? method.toLowerCase();
  }

  private async body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > 3 * 1024 * 1024) throw new KubeError(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728');
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch (err) {
      throw badRequest(`json: ${(err as Error).message}`);
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    let user = ADMIN;
    const prefix = /^\/u\/([A-Za-z0-9_-]+)(\/.*)?$/.exec(url.pathname);
    if (prefix) {
      user = Buffer.from(prefix[1], 'base64url').toString();
      url.pathname = prefix[2] ?? '/';
    }
    const q = url.searchParams;
    const watch = q.get('watch') === 'true' || q.get('watch') === '1';
    const target = this.resolveTarget(url.pathname);
    const verb = target ? this.verbOf(method, target, watch) : undefined;
    const record: RequestRecord = { method, path: url.pathname, query: url.search, user, verb, contentType: req.headers['content-type'], status: 0 };
    this.requests.push(record);
    res.on('finish', () => (record.status = res.statusCode));
    if (watch) record.status = 200;

    const rule = this.failRules.find((r) => r.remaining > 0 && (!r.match || r.match({ method, path: url.pathname, verb, watch })));
    if (rule) {
      rule.remaining--;
      if (rule.remaining <= 0) this.failRules.splice(this.failRules.indexOf(rule), 1);
      const reason = { 409: 'Conflict', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout' }[rule.status] ?? 'Unknown';
      record.status = rule.status;
      return this.sendJson(res, rule.status, statusObject(rule.status, reason, rule.message));
    }

    if ([...this.hangRules].some((m) => m({ method, path: url.pathname, verb, watch }))) {
      record.status = -1;
      this.hungResponses.add(res);
      res.on('close', () => this.hungResponses.delete(res));
      return;
    }

    if (method === 'GET' && !target) {
      const doc = discovery(this.api, url.pathname, url.host);
      if (doc !== undefined) return this.sendJson(res, 200, doc);
    }
    if (!target) {
      await this.body(req).catch(() => undefined);
      return this.sendJson(res, 404, statusObject(404, 'NotFound', 'the server could not find the requested resource'));
    }
    const { type, namespace, name, subresource } = target;
    const resource = subresource ? `${type.plural}/${subresource}` : type.plural;
    const grants = this.rbac.get(user);
    // A list or watch of one name (fieldSelector metadata.name=…) is authorised for that name, so
    // resourceNames can allow it.
    const rbacName = name ?? (verb === 'list' || verb === 'watch' ? exactName(q.get('fieldSelector')) : undefined);
    if (grants && !allows(grants, { user, verb: verb!, group: type.group, resource, name: rbacName, namespace })) {
      throw forbidden({ user, verb: verb!, group: type.group, resource, name: rbacName, namespace });
    }

    const dryRun = q.has('dryRun');
    const writeOpts = {
      fieldValidation: q.get('fieldValidation'),
      dryRun,
      admit: (object: KubeObject, old: KubeObject | undefined) =>
        admitByPolicies(this.api.store, { type, subresource, namespace, name: object.metadata.name ?? '', operation: old ? 'UPDATE' : 'CREATE', object, oldObject: old, user: this.userInfo(user), dryRun }),
    };
    const accept = req.headers.accept;
    const include = (q.get('includeObject') ?? 'Metadata') as IncludeObject;
    switch (method) {
      case 'GET': {
        if (watch) return this.watch(req, res, target, q, wantsTable(accept) ? include : undefined);
        if (name) {
          if (subresource && !(subresource === 'status' && type.statusSubresource)) {
            throw new KubeError(404, 'NotFound', 'the server could not find the requested resource');
          }
          const obj = this.api.get(type, namespace, name);
          if (wantsTable(accept)) return this.sendJson(res, 200, toTable(type, [obj], obj.metadata.resourceVersion!, include));
          return this.sendJson(res, 200, obj);
        }
        return this.list(res, type, namespace, q, wantsTable(accept) ? include : undefined);
      }
      case 'POST': {
        if (name) throw new KubeError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
        this.checkJson(req);
        const input = (await this.body(req)) as KubeObject;
        if (grants) this.checkOwnerReferences(user, grants, type, namespace, input?.metadata?.name ?? '', input);
        const created = this.api.create(type, namespace, input, writeOpts);
        return this.sendJson(res, 201, created);
      }
      case 'PUT': {
        if (!name) throw new KubeError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
        this.checkJson(req);
        const input = (await this.body(req)) as KubeObject;
        if (grants) this.checkOwnerReferences(user, grants, type, namespace, name, input, this.api.store.get(typeKeyOf(type), namespace, name));
        return this.sendJson(res, 200, this.api.update(type, namespace, name, input, subresource, writeOpts));
      }
      case 'PATCH': {
        if (!name) throw new KubeError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
        const contentType = (req.headers['content-type'] ?? '').split(';')[0].trim();
        if (contentType === PATCH_TYPES.apply) {
          throw new KubeError(415, 'UnsupportedMediaType', 'server-side apply is not supported by this fake API server');
        }
        const body = Object.values(PATCH_TYPES).includes(contentType as never) ? await this.body(req) : undefined;
        if (grants) {
          const next = this.api.patch(type, namespace, name, contentType, body, subresource, { ...writeOpts, dryRun: true });
          this.checkOwnerReferences(user, grants, type, namespace, name, next, this.api.store.get(typeKeyOf(type), namespace, name));
        }
        return this.sendJson(res, 200, this.api.patch(type, namespace, name, contentType, body, subresource, writeOpts));
      }
      case 'DELETE': {
        if (!name) throw new KubeError(405, 'MethodNotAllowed', 'deletecollection is not supported by this fake API server');
        const body = ((await this.body(req)) ?? {}) as DeleteOptions;
        const options: DeleteOptions = {
          propagationPolicy: (q.get('propagationPolicy') as DeleteOptions['propagationPolicy']) ?? body.propagationPolicy,
          preconditions: body.preconditions,
        };
        const { object, deleted } = this.api.delete(type, namespace, name, options);
        if (!deleted || type.custom) return this.sendJson(res, 200, object);
        return this.sendJson(res, 200, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Success',
          details: { name, group: type.group || undefined, kind: type.plural, uid: object.metadata.uid },
        });
      }
      default:
        throw new KubeError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    }
  }

  /**
   * OwnerReferencesPermissionEnforcement (an admission plugin OpenShift and hardened clusters run):
   * setting `blockOwnerDeletion` on a reference needs `update` on the owner's `finalizers`
   * subresource. Checked for RBAC-enforced users only, on references that gain the flag.
   */
  private checkOwnerReferences(user: string, grants: Grant[], type: ResourceType, namespace: string | undefined, name: string, next: KubeObject | undefined, old?: KubeObject): void {
    for (const ref of next?.metadata?.ownerReferences ?? []) {
      if (!ref.blockOwnerDeletion) continue;
      if (old?.metadata.ownerReferences?.some((r) => r.uid === ref.uid && r.blockOwnerDeletion)) continue;
      const [group, version] = ref.apiVersion.includes('/') ? ref.apiVersion.split('/') : ['', ref.apiVersion];
      const owner = this.api.allTypes().find((t) => t.group === group && t.version === version && t.kind === ref.kind);
      const resource = `${owner?.plural ?? ref.kind.toLowerCase()}/finalizers`;
      const ns = owner && !owner.namespaced ? undefined : namespace;
      if (owner && allows(grants, { user, verb: 'update', group, resource, name: ref.name, namespace: ns })) continue;
      const scope = ns ? `in the namespace "${ns}"` : 'at the cluster scope';
      throw new KubeError(403, 'Forbidden',
        `${qualifiedName(type)} "${name}" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: User "${user}" cannot update resource "${resource}" in API group "${group}" ${scope}, <nil>`,
        { name, group: type.group || undefined, kind: type.plural });
    }
  }

  private checkJson(req: IncomingMessage): void {
    const ct = (req.headers['content-type'] ?? 'application/json').split(';')[0].trim();
    if (ct !== 'application/json' && ct !== '*/*') {
      throw new KubeError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`);
    }
  }

  private list(res: ServerResponse, type: ResourceType, namespace: string | undefined, q: URLSearchParams, table?: IncludeObject): void {
    const select = (o: KubeObject) => labels(o) && fields(o);
    const labels = labelSelector(q.get('labelSelector'));
    const fields = fieldSelector(q.get('fieldSelector'));
    const { items, resourceVersion } = this.api.list(type, namespace);
    let selected = items.filter(select);
    let start = 0;
    const token = q.get('continue');
    if (token) {
      try {
        start = JSON.parse(Buffer.from(token, 'base64').toString()).start;
      } catch {
        throw badRequest('continue key is not valid');
      }
    }
    const limit = Number(q.get('limit') ?? 0);
    let next: string | undefined;
    let remaining: number | undefined;
    if (limit > 0 && selected.length - start > limit) {
      next = Buffer.from(JSON.stringify({ start: start + limit })).toString('base64');
      remaining = selected.length - start - limit;
    }
    selected = selected.slice(start, limit > 0 ? start + limit : undefined);
    if (table) {
      const t = toTable(type, selected, resourceVersion, table);
      (t.metadata as Record<string, unknown>).continue = next;
      return this.sendJson(res, 200, t);
    }
    if (!type.custom) for (const item of selected) delete item.apiVersion, delete item.kind;
    this.sendJson(res, 200, {
      kind: type.listKind,
      apiVersion: gvOf(type),
      metadata: { resourceVersion, ...(next ? { continue: next, remainingItemCount: remaining } : {}) },
      items: selected,
    });
  }

  private watch(req: IncomingMessage, res: ServerResponse, target: Target, q: URLSearchParams, table?: IncludeObject): void {
    const { type, namespace } = target;
    const labels = labelSelector(q.get('labelSelector'));
    const fields = fieldSelector(target.name ? `metadata.name=${target.name}` : q.get('fieldSelector'));
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    let closed = false;
    let headersSent = false;
    const timers: NodeJS.Timeout[] = [];
    const cleanup = () => {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t), clearInterval(t);
      this.api.store.watchers.delete(watcher);
      this.watchCleanups.delete(cleanup);
      res.end();
    };
    const watcher: Watcher = {
      typeKey: typeKeyOf(type),
      options: { namespace, resourceVersion: q.get('resourceVersion') ?? undefined, select: (o) => labels(o) && fields(o) },
      hung: this.watchesHang,
      send: (eventType, object) => {
        if (closed) return;
        let payload: unknown = object;
        if (table && (eventType === 'ADDED' || eventType === 'MODIFIED' || eventType === 'DELETED')) {
          payload = toTable(type, [object as KubeObject], String((object as KubeObject).metadata.resourceVersion), table, !headersSent);
          headersSent = true;
        }
        res.write(`${JSON.stringify({ type: eventType, object: payload })}\n`);
      },
      close: cleanup,
    };
    this.watchCleanups.add(cleanup);
    req.on('close', cleanup);
    res.on('close', cleanup);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    if (timeout > 0) timers.push(setTimeout(cleanup, timeout * 1000));
    if (q.get('allowWatchBookmarks') === 'true') {
      timers.push(
        setInterval(() => {
          if (watcher.hung) return;
          watcher.send('BOOKMARK', { kind: type.kind, apiVersion: gvOf(type), metadata: { resourceVersion: String(this.api.store.resourceVersion) } });
        }, this.bookmarkIntervalMs),
      );
    }
    if (watcher.hung) {
      this.api.store.watchers.add(watcher);
      return;
    }
    this.api.store.watch(watcher);
  }
}

/** The name a field selector requires (`metadata.name=x`, alone or with other terms), as the API server reads it for authorisation. */
function exactName(selector: string | null): string | undefined {
  for (const term of (selector ?? '').split(',')) {
    const m = /^\s*metadata\.name\s*==?\s*(\S+)\s*$/.exec(term);
    if (m) return m[1];
  }
  return undefined;
}
