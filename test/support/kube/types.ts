/** Shapes shared by the fake API server's parts. */
import type { ObjectMeta } from '../../../operator/src/resources/meta.js';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { [key: string]: unknown };
  [key: string]: unknown;
}

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  priority?: number;
  description?: string;
  format?: string;
  /** Built-in columns that are not a plain path (a Secret's key count). */
  compute?: (obj: KubeObject) => unknown;
}

/** One served resource (a REST collection): core, built-in group, or custom from a CRD. */
export interface ResourceType {
  group: string; // '' for the core group
  version: string;
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** Custom resources: structural schema (openAPIV3Schema) of the CRD version. */
  schema?: Record<string, any>;
  /** `status` is a subresource: the main endpoint ignores status changes and /status ignores the rest. */
  statusSubresource: boolean;
  /** metadata.generation is kept and bumped on changes outside metadata and status. */
  generational: boolean;
  /** PUT without metadata.resourceVersion is allowed (core kinds); custom resources refuse it. */
  unconditionalUpdate: boolean;
  /** application/strategic-merge-patch+json is accepted (built-in kinds only). */
  strategicMerge: boolean;
  columns: PrinterColumn[];
  custom: boolean;
}

export const gvOf = (t: Pick<ResourceType, 'group' | 'version'>): string => (t.group ? `${t.group}/${t.version}` : t.version);
/** `projects.analytics.tally.dev`, `secrets`: how the API server names a resource in messages. */
export const qualifiedName = (t: Pick<ResourceType, 'group' | 'plural'>): string => (t.group ? `${t.plural}.${t.group}` : t.plural);

/** A Kubernetes Status error as the API server sends it. */
export class KubeError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

export const notFound = (t: ResourceType, name: string) =>
  new KubeError(404, 'NotFound', `${qualifiedName(t)} "${name}" not found`, { name, group: t.group || undefined, kind: t.plural });
export const alreadyExists = (t: ResourceType, name: string) =>
  new KubeError(409, 'AlreadyExists', `${qualifiedName(t)} "${name}" already exists`, { name, group: t.group || undefined, kind: t.plural });
export const conflict = (t: ResourceType, name: string, why = 'the object has been modified; please apply your changes to the latest version and try again') =>
  new KubeError(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedName(t)} "${name}": ${why}`, {
    name,
    group: t.group || undefined,
    kind: t.plural,
  });
export const badRequest = (message: string) => new KubeError(400, 'BadRequest', message);

export interface FieldCause {
  reason: string;
  message: string;
  field: string;
}

/** 422 Invalid, worded like the API server: `Kind.group "name" is invalid: field: message`. */
export function invalid(t: ResourceType, name: string, causes: FieldCause[]): KubeError {
  const lines = causes.map((c) => `${c.field}: ${c.message}`);
  const kindName = t.group ? `${t.kind}.${t.group}` : t.kind;
  const summary = lines.length === 1 ? lines[0] : `[${lines.join(', ')}]`;
  return new KubeError(422, 'Invalid', `${kindName} "${name}" is invalid: ${summary}`, {
    name,
    group: t.group || undefined,
    kind: t.kind,
    causes: causes.map((c) => ({ reason: c.reason, message: c.message, field: c.field })),
  });
}

export const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
