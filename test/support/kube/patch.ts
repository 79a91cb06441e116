import { KubeError } from './types.js';

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

/**
 * Strategic merge patch, as far as the built-in kinds served here need it (Secrets, Events,
 * Leases have no lists with merge keys that kubectl patches): a merge patch with the `$`
 * directives dropped. Not the full algorithm; custom resources refuse it with 415 anyway.
 */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  return stripDirectives(mergePatch(target, stripDirectives(patch)));
}

function stripDirectives(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (!k.startsWith('$')) out[k] = stripDirectives(v);
  return out;
}

interface Op {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new KubeError(422, 'Invalid', `json patch: invalid path "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: unknown, parts: string[], path: string): { parent: any; key: string } {
  let node: any = doc;
  for (const part of parts.slice(0, -1)) {
    node = Array.isArray(node) ? node[Number(part)] : node?.[part];
    if (node === undefined || node === null || typeof node !== 'object') {
      throw new KubeError(422, 'Invalid', `jsonpatch: doc is missing path: "${path}": missing value`);
    }
  }
  return { parent: node, key: parts[parts.length - 1] };
}

function get(doc: unknown, path: string): unknown {
  let node: any = doc;
  for (const part of pointer(path)) {
    node = Array.isArray(node) ? node[Number(part)] : node?.[part];
    if (node === undefined) throw new KubeError(422, 'Invalid', `jsonpatch: doc is missing path: "${path}": missing value`);
  }
  return node;
}

function add(doc: unknown, path: string, value: unknown): unknown {
  const parts = pointer(path);
  if (parts.length === 0) return value;
  const { parent, key } = parentOf(doc, parts, path);
  if (Array.isArray(parent)) {
    const index = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(index) || index < 0 || index > parent.length) {
      throw new KubeError(422, 'Invalid', `jsonpatch add operation does not apply: index out of bounds: ${path}`);
    }
    parent.splice(index, 0, value);
  } else parent[key] = value;
  return doc;
}

function remove(doc: unknown, path: string): unknown {
  const parts = pointer(path);
  const { parent, key } = parentOf(doc, parts, path);
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length) {
      throw new KubeError(422, 'Invalid', `jsonpatch remove operation does not apply: doc is missing path: "${path}"`);
    }
    parent.splice(index, 1);
  } else {
    if (!(key in parent)) throw new KubeError(422, 'Invalid', `jsonpatch remove operation does not apply: doc is missing key: ${path}: missing value`);
    delete parent[key];
  }
  return doc;
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.keys(v as object).sort().map((k) => [k, sortKeys((v as any)[k])]));
}

/** RFC 6902 JSON patch (add, remove, replace, move, copy, test). */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new KubeError(400, 'BadRequest', 'json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc = structuredClone(target);
  for (const raw of ops as Op[]) {
    if (typeof raw?.path !== 'string') throw new KubeError(422, 'Invalid', 'jsonpatch: operation has no path');
    switch (raw.op) {
      case 'add':
        doc = add(doc, raw.path, structuredClone(raw.value));
        break;
      case 'remove':
        doc = remove(doc, raw.path);
        break;
      case 'replace':
        get(doc, raw.path);
        doc = pointer(raw.path).length === 0 ? structuredClone(raw.value) : add(remove(doc, raw.path), raw.path, structuredClone(raw.value));
        break;
      case 'move': {
        const value = get(doc, raw.from ?? '');
        doc = add(remove(doc, raw.from ?? ''), raw.path, value);
        break;
      }
      case 'copy':
        doc = add(doc, raw.path, structuredClone(get(doc, raw.from ?? '')));
        break;
      case 'test':
        if (!deepEqual(get(doc, raw.path), raw.value)) {
          throw new KubeError(422, 'Invalid', `the server rejected our request due to an error in our request: testing value ${raw.path} failed`);
        }
        break;
      default:
        throw new KubeError(422, 'Invalid', `Unexpected kind: ${String(raw.op)}`);
    }
  }
  return doc;
}
