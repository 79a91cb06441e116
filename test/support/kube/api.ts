import { randomUUID } from 'node:crypto';
import { POLICY_KEY, policyProblems } from './admission.js';
import { admit, applyDefaults, unsupportedRules } from './schema.js';
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.js';
import { Store, typeKeyOf } from './store.js';
import { BUILTIN_TYPES, typeFromCrd } from './types-builtin.js';
import {
  KubeError,
  alreadyExists,
  badRequest,
  conflict,
  gvOf,
  invalid,
  notFound,
  now,
  qualifiedName,
  type FieldCause,
  type KubeObject,
  type ResourceType,
} from './types.js';

/**
 * The API server's semantics on top of the store: create/get/list/update/patch/delete,
 * resourceVersion conflicts, the status subresource, metadata.generation, finalizers and
 * deletionTimestamp, background garbage collection by ownerReferences, admission of custom
 * resources against their CRD schema, and CRDs that (un)register the kinds they define.
 * Longer than most files: it is one write path (create/update/patch/delete share `write` and
 * `admitted`), which reads better whole than split.
 */

export interface WriteOptions {
  fieldValidation?: string | null;
  dryRun?: boolean;
  /** Validating admission of the final object (the server's policies, with the caller's identity). */
  admit?: (object: KubeObject, old: KubeObject | undefined) => void;
}

export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
}

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

const CRD_KEY = 'apiextensions.k8s.io/customresourcedefinitions';
const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';
/** Semantic equality (the API server compares decoded objects: key order does not matter). */
const canonical = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(canonical) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as any)[k])])) : v;
const sameJson = (a: unknown, b: unknown) => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
const randomSuffix = () => Array.from({ length: 5 }, () => 'bcdfghjklmnpqrstvwxz2456789'[Math.floor(Math.random() * 27)]).join('');

export class Api {
  readonly store: Store;
  private readonly types = new Map<string, ResourceType>();
  /** Delay before the garbage collector acts on a deletion (it is asynchronous in a cluster too). */
  gcDelayMs = 5;
  private gcTimers = new Set<NodeJS.Timeout>();

  constructor(historyLimit: number) {
    this.store = new Store(historyLimit);
    for (const t of BUILTIN_TYPES) this.types.set(typeKeyOf(t), t);
    this.store.onChange((change) => {
      if (change.type === 'DELETED' && change.object.metadata.uid) this.scheduleGc(change.object.metadata.uid);
    });
  }

  close(): void {
    for (const t of this.gcTimers) clearTimeout(t);
  }

  /** Every served type, built-in and custom. */
  allTypes(): ResourceType[] {
    return [...this.types.values()];
  }

  findType(group: string, version: string, plural: string): ResourceType | undefined {
    const t = this.types.get(`${group}/${plural}`);
    return t && t.version === version ? t : undefined;
  }

  // ---- reads ----

  get(t: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const obj = this.store.get(typeKeyOf(t), namespace, name);
    if (!obj) throw notFound(t, name);
    return this.present(t, obj);
  }

  list(t: ResourceType, namespace: string | undefined): { items: KubeObject[]; resourceVersion: string } {
    return { items: this.store.list(typeKeyOf(t), namespace).map((o) => this.present(t, o, true)), resourceVersion: String(this.store.resourceVersion) };
  }

  /** Defaults apply on read too (a CRD default added later shows on old objects). */
  present(t: ResourceType, obj: KubeObject, owned = false): KubeObject {
    return t.schema ? (applyDefaults(t.schema, obj, owned) as KubeObject) : obj;
  }

  // ---- writes ----

  create(t: ResourceType, namespace: string | undefined, body: KubeObject, opts: WriteOptions = {}): KubeObject {
    if (!body || typeof body !== 'object' || !body.metadata || typeof body.metadata !== 'object') body = { ...(body ?? {}), metadata: {} };
    this.checkKind(t, body);
    const meta = body.metadata;
    if (t.namespaced) {
      if (meta.namespace && namespace && meta.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
    }
    if (meta.resourceVersion) throw new KubeError(500, 'InternalError', 'Internal error occurred: resourceVersion should not be set on objects to be created');
    if (t.custom && this.store.get(CRD_KEY, undefined, `${t.plural}.${t.group}`)?.metadata.deletionTimestamp) {
      throw new KubeError(405, 'MethodNotAllowed', 'create not allowed while custom resource definition is terminating');
    }
    const name = meta.name || (meta.generateName ? `${meta.generateName}${randomSuffix()}` : '');
    if (!name) throw invalid(t, '', [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }]);
    this.checkName(t, name);
    if (this.store.get(typeKeyOf(t), t.namespaced ? namespace : undefined, name)) throw alreadyExists(t, name);
    let obj: KubeObject = {
      ...structuredClone(body),
      apiVersion: gvOf(t),
      kind: t.kind,
      metadata: {
        ...structuredClone(meta),
        name,
        ...(t.namespaced ? { namespace } : {}),
        uid: randomUUID(),
        creationTimestamp: now(),
        ...(t.generational ? { generation: 1 } : {}),
      },
    };
    delete obj.metadata.namespace;
    if (t.namespaced) obj.metadata.namespace = namespace;
    delete obj.metadata.deletionTimestamp;
    delete obj.metadata.deletionGracePeriodSeconds;
    if (t.statusSubresource && t.custom) delete obj.status;
    obj = this.admitted(t, obj, undefined, opts);
    if (opts.dryRun) return obj;
    const stored = this.store.commit(typeKeyOf(t), 'ADDED', obj);
    if (typeKeyOf(t) === CRD_KEY) return this.establish(stored);
    return this.present(t, stored);
  }

  /** PUT of the object (`subresource` undefined) or of its status. */
  update(t: ResourceType, namespace: string | undefined, name: string, body: KubeObject, subresource: string | undefined, opts: WriteOptions = {}): KubeObject {
    const old = this.store.get(typeKeyOf(t), namespace, name);
    if (!old) throw notFound(t, name);
    if (!body || typeof body !== 'object' || !body.metadata) throw badRequest('Object \'metadata\' is missing');
    this.checkKind(t, body);
    if (body.metadata.name !== undefined && body.metadata.name !== name) {
      throw badRequest(`the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`);
    }
    const rv = body.metadata.resourceVersion;
    if (!rv && !t.unconditionalUpdate) {
      throw invalid(t, name, [{ reason: 'FieldValueInvalid', field: 'metadata.resourceVersion', message: 'Invalid value: 0x0: must be specified for an update' }]);
    }
    if (rv && rv !== old.metadata.resourceVersion) throw conflict(t, name);
    return this.write(t, old, body, subresource, opts);
  }

  patch(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
    contentType: string,
    patch: unknown,
    subresource: string | undefined,
    opts: WriteOptions = {},
  ): KubeObject {
    const old = this.store.get(typeKeyOf(t), namespace, name);
    if (!old) throw notFound(t, name);
    const current = this.present(t, old);
    let next: unknown;
    if (contentType === PATCH_TYPES.merge) next = mergePatch(current, patch);
    else if (contentType === PATCH_TYPES.json) next = jsonPatch(current, patch);
    else if (contentType === PATCH_TYPES.strategic && t.strategicMerge) next = strategicMergePatch(current, patch);
    else {
      throw new KubeError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.json}, ${PATCH_TYPES.merge}${t.strategicMerge ? `, ${PATCH_TYPES.strategic}` : ''}`,
      );
    }
    const body = next as KubeObject;
    if (!body || typeof body !== 'object' || !body.metadata || typeof body.metadata !== 'object') throw badRequest('Object \'metadata\' is missing');
    if (body.metadata.name !== name) throw badRequest(`the name of the object (${String(body.metadata.name)}) does not match the name on the URL (${name})`);
    if (body.metadata.resourceVersion !== old.metadata.resourceVersion) throw conflict(t, name);
    return this.write(t, old, body, subresource, opts);
  }

  delete(t: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions = {}): { object: KubeObject; deleted: boolean } {
    const old = this.store.get(typeKeyOf(t), namespace, name);
    if (!old) throw notFound(t, name);
    const pre = options.preconditions ?? {};
    if (pre.uid && pre.uid !== old.metadata.uid) {
      throw conflict(t, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`);
    }
    if (pre.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw conflict(t, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`);
    }
    if (options.propagationPolicy === 'Orphan') this.orphanDependents(old.metadata.uid!);
    if (typeKeyOf(t) === CRD_KEY) return { object: this.markCrdDeleted(old), deleted: false };
    if ((old.metadata.finalizers ?? []).length > 0) {
      if (old.metadata.deletionTimestamp) return { object: this.present(t, old), deleted: false };
      const marked = structuredClone(old);
      marked.metadata.deletionTimestamp = now();
      marked.metadata.deletionGracePeriodSeconds = 0;
      if (t.generational) marked.metadata.generation = (old.metadata.generation ?? 1) + 1;
      return { object: this.present(t, this.store.commit(typeKeyOf(t), 'MODIFIED', marked)), deleted: false };
    }
    return { object: this.present(t, this.remove(t, old)), deleted: true };
  }

  // ---- internals ----

  private remove(t: ResourceType, old: KubeObject): KubeObject {
    const gone = this.store.commit(typeKeyOf(t), 'DELETED', old);
    if (typeKeyOf(t) === CRD_KEY) this.unregister(old);
    return gone;
  }

  private checkKind(t: ResourceType, body: KubeObject): void {
    if (body.kind !== undefined && body.kind !== t.kind) {
      throw badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${gvOf(t)}) or kind ${String(body.kind)} is not ${t.kind}`);
    }
    if (body.apiVersion !== undefined && body.apiVersion !== gvOf(t)) {
      throw badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${gvOf(t)})`);
    }
  }

  private checkName(t: ResourceType, name: string): void {
    const dns1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
    if (name.length > 253 || !dns1123.test(name)) {
      throw invalid(t, name, [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.name',
          message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
        },
      ]);
    }
  }

  /** The common path of update and patch: merge per endpoint, admit, bump generation, store. */
  private write(t: ResourceType, old: KubeObject, body: KubeObject, subresource: string | undefined, opts: WriteOptions): KubeObject {
    let next: KubeObject;
    if (subresource === 'status') {
      if (!t.statusSubresource) throw new KubeError(404, 'NotFound', 'the server could not find the requested resource');
      // Only status changes; everything else is the stored object's.
      next = structuredClone(old);
      if (body.status === undefined) delete next.status;
      else next.status = structuredClone(body.status);
    } else if (subresource) {
      throw new KubeError(404, 'NotFound', 'the server could not find the requested resource');
    } else {
      next = structuredClone(body);
      next.apiVersion = gvOf(t);
      next.kind = t.kind;
      if (t.statusSubresource) {
        if (old.status === undefined) delete next.status;
        else next.status = structuredClone(old.status);
      }
      // What the API server owns in metadata, whatever the client sent.
      for (const key of ['name', 'namespace', 'uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation'] as const) {
        if (old.metadata[key] === undefined) delete next.metadata[key];
        else (next.metadata as Record<string, unknown>)[key] = old.metadata[key];
      }
      if (old.metadata.deletionTimestamp) {
        const before = new Set(old.metadata.finalizers ?? []);
        const added = (next.metadata.finalizers ?? []).filter((f) => !before.has(f));
        if (added.length > 0) {
          throw invalid(t, old.metadata.name!, [
            {
              reason: 'FieldValueForbidden',
              field: 'metadata.finalizers',
              message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`,
            },
          ]);
        }
      }
    }
    next.metadata.resourceVersion = old.metadata.resourceVersion;
    next = this.admitted(t, next, old, opts);
    if (t.generational) {
      // Without a status subresource, status is part of what bumps generation (as for CRDs in a cluster).
      const strip = (o: KubeObject) => {
        const { metadata, status, ...rest } = o;
        void metadata;
        return t.statusSubresource ? rest : { ...rest, status };
      };
      if (!sameJson(strip(next), strip(this.present(t, old)))) next.metadata.generation = (old.metadata.generation ?? 1) + 1;
    }
    // A write that changes nothing is not a write: same resourceVersion, no watch event.
    if (sameJson(next, old)) return this.present(t, old);
    if (opts.dryRun) return next;
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) return this.present(t, this.remove(t, next));
    const stored = this.store.commit(typeKeyOf(t), 'MODIFIED', next);
    if (typeKeyOf(t) === CRD_KEY) return this.establish(stored);
    return this.present(t, stored);
  }

  /** Admission: Secret stringData, CRD checks, and custom resources against their schema. */
  private admitted(t: ResourceType, obj: KubeObject, old: KubeObject | undefined, opts: WriteOptions): KubeObject {
    if (t.kind === 'Secret' && !t.group) {
      const stringData = obj.stringData as Record<string, string> | undefined;
      if (stringData) {
        obj.data = { ...((obj.data as Record<string, string>) ?? {}) };
        for (const [k, v] of Object.entries(stringData)) (obj.data as Record<string, string>)[k] = Buffer.from(String(v)).toString('base64');
        delete obj.stringData;
      }
      obj.type ??= 'Opaque';
    }
    if ((t.kind === 'Secret' || t.kind === 'ConfigMap') && !t.group) this.checkDataKeys(t, obj);
    if (typeKeyOf(t) === CRD_KEY) this.checkCrd(obj);
    if (typeKeyOf(t) === POLICY_KEY) {
      const causes = policyProblems(obj);
      if (causes.length > 0) throw invalid(t, obj.metadata.name ?? '', causes);
    }
    if (!t.schema) {
      opts.admit?.(obj, old);
      return obj;
    }
    const result = admit(t.schema, obj, old);
    if (opts.fieldValidation === 'Strict' && result.pruned.length > 0) {
      throw badRequest(`${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: strict decoding error: ${result.pruned.map((p) => `unknown field "${p}"`).join(', ')}`);
    }
    if (result.causes.length > 0) throw invalid(t, obj.metadata.name ?? '', result.causes);
    opts.admit?.(result.object as KubeObject, old);
    return result.object as KubeObject;
  }

  /** Secret and ConfigMap keys and the 1 MiB limit on their content, as the API server checks them. */
  private checkDataKeys(t: ResourceType, obj: KubeObject): void {
    const causes: FieldCause[] = [];
    let total = 0;
    for (const field of ['data', 'binaryData']) {
      for (const [key, value] of Object.entries((obj[field] as Record<string, string>) ?? {})) {
        if (!/^[-._a-zA-Z0-9]+$/.test(key) || key.length > 253) {
          causes.push({
            reason: 'FieldValueInvalid',
            field: `${field}[${key}]`,
            message: `Invalid value: "${key}": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
          });
        }
        const base64 = t.kind === 'Secret' || field === 'binaryData';
        total += base64 ? Buffer.from(String(value), 'base64').length : Buffer.byteLength(String(value));
      }
    }
    if (total > 1024 * 1024) causes.push({ reason: 'FieldValueTooLong', field: 'data', message: 'Too long: must have at most 1048576 bytes' });
    if (causes.length > 0) throw invalid(t, obj.metadata.name ?? '', causes);
  }

  private checkCrd(crd: KubeObject): void {
    const spec = crd.spec as any;
    const causes: FieldCause[] = [];
    if (!spec?.group || !spec?.names?.plural || !spec?.names?.kind || !Array.isArray(spec?.versions) || spec.versions.length === 0) {
      causes.push({ reason: 'FieldValueRequired', field: 'spec', message: 'Required value: group, names.plural, names.kind and versions' });
    } else {
      if (crd.metadata.name !== `${spec.names.plural}.${spec.group}`) {
        causes.push({ reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: "${crd.metadata.name}": must be spec.names.plural+"."+spec.group` });
      }
      for (const [i, v] of spec.versions.entries()) {
        const schema = v.schema?.openAPIV3Schema;
        if (!schema) {
          causes.push({ reason: 'FieldValueRequired', field: `spec.versions[${i}].schema.openAPIV3Schema`, message: 'Required value: schemas are required' });
          continue;
        }
        for (const rule of unsupportedRules(schema)) {
          causes.push({ reason: 'FieldValueInvalid', field: `spec.versions[${i}].schema.openAPIV3Schema`, message: `this fake API server evaluates only "self == oldSelf" and "has(self.a) != has(self.b)" (${rule})` });
        }
      }
      const existing = this.types.get(`${spec.group}/${spec.names.plural}`);
      if (existing && !existing.custom) causes.push({ reason: 'FieldValueInvalid', field: 'spec.names.plural', message: 'Invalid value: a built-in resource has this name' });
    }
    if (causes.length > 0) throw invalid(this.types.get(CRD_KEY)!, crd.metadata.name ?? '', causes);
  }

  /** Registers the kind of a stored CRD and reports it Established, as the API server does. */
  private establish(crd: KubeObject): KubeObject {
    const t = typeFromCrd(crd);
    this.types.set(typeKeyOf(t), t);
    const spec = crd.spec as any;
    const status = {
      acceptedNames: spec.names,
      storedVersions: [t.version],
      conditions: [
        { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found', lastTransitionTime: now() },
        { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted', lastTransitionTime: now() },
      ],
    };
    const prev = (crd.status as any)?.conditions;
    if (prev && sameJson({ ...status, conditions: undefined }, { ...(crd.status as any), conditions: undefined })) return crd;
    const next = structuredClone(crd);
    next.status = status;
    return this.store.commit(CRD_KEY, 'MODIFIED', next);
  }

  private unregister(crd: KubeObject): void {
    const spec = crd.spec as any;
    const key = `${spec.group}/${spec.names.plural}`;
    this.store.dropType(key);
    this.types.delete(key);
  }

  // ---- CRD deletion ----

  /**
   * As the API server deletes a CRD: marked Terminating with the cleanup finalizer, then every
   * resource of its kind is deleted (their finalizers run as usual; new ones are refused), and the
   * CRD goes once none is left.
   */
  private markCrdDeleted(old: KubeObject): KubeObject {
    if (old.metadata.deletionTimestamp) return old;
    const marked = structuredClone(old);
    marked.metadata.deletionTimestamp = now();
    marked.metadata.deletionGracePeriodSeconds = 0;
    marked.metadata.finalizers = [...new Set([...(old.metadata.finalizers ?? []), CRD_CLEANUP_FINALIZER])];
    const status = (old.status ?? {}) as { conditions?: { type: string }[] };
    marked.status = {
      ...status,
      conditions: [...(status.conditions ?? []).filter((c) => c.type !== 'Terminating'), {
        type: 'Terminating', status: 'True', reason: 'InstanceDeletionPending', lastTransitionTime: now(),
        message: 'CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon',
      }],
    };
    const stored = this.store.commit(CRD_KEY, 'MODIFIED', marked);
    this.cleanUpCrd(old.metadata.name!);
    return stored;
  }

  private cleanUpCrd(name: string): void {
    const timer = setTimeout(() => {
      this.gcTimers.delete(timer);
      const crd = this.store.get(CRD_KEY, undefined, name);
      if (!crd?.metadata.deletionTimestamp) return;
      const spec = crd.spec as any;
      const t = this.types.get(`${spec.group}/${spec.names.plural}`);
      const items = t ? this.store.list(typeKeyOf(t)) : [];
      for (const o of items) {
        if (o.metadata.deletionTimestamp) continue;
        try { this.delete(t!, o.metadata.namespace, o.metadata.name!, { propagationPolicy: 'Background' }); } catch { /* gone meanwhile */ }
      }
      if (t && this.store.list(typeKeyOf(t)).length > 0) return this.cleanUpCrd(name);
      const done = structuredClone(crd);
      done.metadata.finalizers = (crd.metadata.finalizers ?? []).filter((f) => f !== CRD_CLEANUP_FINALIZER);
      const crdType = this.types.get(CRD_KEY)!;
      if (done.metadata.finalizers.length > 0) this.store.commit(CRD_KEY, 'MODIFIED', done);
      else this.remove(crdType, done);
    }, Math.max(20, this.gcDelayMs));
    this.gcTimers.add(timer);
  }

  // ---- garbage collection ----

  private scheduleGc(uid: string): void {
    const timer = setTimeout(() => {
      this.gcTimers.delete(timer);
      this.collect(uid);
    }, this.gcDelayMs);
    this.gcTimers.add(timer);
  }

  /** Deletes dependents whose owners are all gone; drops dangling references from the others. */
  private collect(ownerUid: string): void {
    for (const { typeKey, object: o } of this.store.dependentsOf(ownerUid)) {
      const t = this.types.get(typeKey);
      if (!t) continue;
      const refs = o.metadata.ownerReferences ?? [];
      const others = refs.filter((r) => r.uid !== ownerUid && this.store.hasUid(r.uid));
      try {
        if (others.length === 0) this.delete(t, o.metadata.namespace, o.metadata.name!, { propagationPolicy: 'Background' });
        else {
          const next = structuredClone(o);
          next.metadata.ownerReferences = refs.filter((r) => r.uid !== ownerUid);
          this.store.commit(typeKey, 'MODIFIED', next);
        }
      } catch {
        // Gone meanwhile: nothing to collect.
      }
    }
  }

  private orphanDependents(ownerUid: string): void {
    for (const { typeKey, object: o } of this.store.dependentsOf(ownerUid)) {
      const next = structuredClone(o);
      next.metadata.ownerReferences = (o.metadata.ownerReferences ?? []).filter((r) => r.uid !== ownerUid);
      this.store.commit(typeKey, 'MODIFIED', next);
    }
  }
}

export { qualifiedName };
