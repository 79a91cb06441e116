import type { Api } from './api.js';
import { gvOf, type ResourceType } from './types.js';

/**
 * Discovery documents (legacy, unaggregated: clients fall back to them when the answer is plain
 * application/json), /version, and the OpenAPI v3 index kubectl reads to learn that the server
 * validates fields itself (so it sends `fieldValidation=Strict` instead of validating locally).
 */

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-fake',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.23.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

const VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

function resourceList(types: ResourceType[], groupVersion: string): Record<string, unknown> {
  const resources: Record<string, unknown>[] = [];
  for (const t of types) {
    resources.push({
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: VERBS,
      ...(t.shortNames.length ? { shortNames: t.shortNames } : {}),
      ...(t.categories.length ? { categories: t.categories } : {}),
      storageVersionHash: Buffer.from(`${gvOf(t)}/${t.kind}`).toString('base64').slice(0, 11),
    });
    if (t.statusSubresource) resources.push({ name: `${t.plural}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources };
}

/** The discovery answer for `path`, or undefined when it is not a discovery path. */
export function discovery(api: Api, path: string, host: string): unknown {
  const types = api.allTypes();
  if (path === '/version') return SERVER_VERSION;
  if (path === '/api') {
    return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: host }] };
  }
  if (path === '/api/v1') return resourceList(types.filter((t) => t.group === ''), 'v1');
  const groups = new Map<string, ResourceType[]>();
  for (const t of types) if (t.group) groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
  const groupDoc = (name: string, list: ResourceType[]) => {
    const gv = { groupVersion: `${name}/${list[0].version}`, version: list[0].version };
    return { name, versions: [gv], preferredVersion: gv };
  };
  if (path === '/apis') return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groups].map(([name, list]) => groupDoc(name, list)) };
  const m = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(path);
  if (m && groups.has(m[1])) {
    const list = groups.get(m[1])!;
    if (!m[2]) return { kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(m[1], list) };
    if (m[2] === list[0].version) return resourceList(list, `${m[1]}/${m[2]}`);
  }
  if (path === '/openapi/v3') {
    const paths: Record<string, unknown> = { 'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=fake' } };
    for (const [name, list] of groups) paths[`apis/${name}/${list[0].version}`] = { serverRelativeURL: `/openapi/v3/apis/${name}/${list[0].version}?hash=fake` };
    return { paths };
  }
  const o = /^\/openapi\/v3\/(api\/v1|apis\/([^/]+)\/([^/]+))$/.exec(path);
  if (o) {
    const list = o[1] === 'api/v1' ? types.filter((t) => t.group === '') : (groups.get(o[2]) ?? []).filter((t) => t.version === o[3]);
    if (list.length === 0) return undefined;
    return openApiV3(list);
  }
  return undefined;
}

/** Just enough OpenAPI v3 for kubectl: every kind's PATCH operation, declaring `fieldValidation`. */
function openApiV3(types: ResourceType[]): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const t of types) {
    const prefix = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;
    const path = t.namespaced ? `${prefix}/namespaces/{namespace}/${t.plural}/{name}` : `${prefix}/${t.plural}/{name}`;
    const gvk = { group: t.group, version: t.version, kind: t.kind };
    const op = (verb: string) => ({
      operationId: `${verb}${t.kind}`,
      'x-kubernetes-action': verb,
      'x-kubernetes-group-version-kind': gvk,
      parameters: [{ name: 'fieldValidation', in: 'query', schema: { type: 'string', uniqueItems: true } }],
      responses: { '200': { description: 'OK' } },
    });
    paths[path] = { patch: op('patch'), put: op('put') };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.32.0-fake' }, paths, components: { schemas: {} } };
}
