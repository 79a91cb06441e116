import { z } from 'zod';

/**
 * What the three kinds share: group and version, the finalizer, metav1.Condition, references,
 * and the TS shape of an object as the API server returns it.
 */

export const GROUP = 'analytics.tally.dev';
export const VERSION = 'v1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const FINALIZER = 'analytics.tally.dev/finalizer';

export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
/** Reasons the operator writes on `Ready` (docs/decisions.md, "Kubernetes contract"; others may be added). */
export const REASONS = ['Reconciled', 'Invalid', 'ProjectNotFound', 'OrganizationNotFound', 'NamespaceNotAllowed', 'AdoptionRefused', 'Conflict', 'ApiUnavailable'] as const;

/** Takes over an existing organisation or project (its id) instead of creating one. */
export const ADOPT_ANNOTATION = 'analytics.tally.dev/adopt-id';
export type Reason = (typeof REASONS)[number];

/** metav1.Condition, with the API server's own bounds and patterns. */
export const ConditionSchema = z.object({
  type: z
    .string()
    .max(316)
    .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/),
  status: z.enum(CONDITION_STATUSES),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: z.string().meta({ format: 'date-time' }),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof ConditionSchema>;

/** `conditions` is a list keyed by `type` (server-side apply and merges treat it as a map). */
export const ConditionsSchema = z
  .array(ConditionSchema)
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });

/** The part every status has. */
export const BaseStatusShape = {
  observedGeneration: z.number().int().min(0).optional(),
  conditions: ConditionsSchema.optional(),
};

/** A Kubernetes object name (DNS subdomain, as the API server checks metadata.name). */
export const ObjectName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);

/** A reference to a Project in the same namespace. */
export const ProjectRefSchema = z.object({ name: ObjectName }).strict();
export type ProjectRef = z.infer<typeof ProjectRefSchema>;

/** A reference to an Organization (cluster-scoped); immutable once set. */
export const OrganizationRefSchema = z
  .object({ name: ObjectName })
  .strict()
  .meta({ 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'organizationRef is immutable' }] });
export type OrganizationRef = z.infer<typeof OrganizationRefSchema>;

/** A namespace name (DNS label). */
export const NamespaceName = z.string().min(1).max(63).regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);

/** An email as the service's invitation accepts it (simple form: RE2 has no lookaheads). */
export const Email = z.string().min(3).max(320).regex(/^[^@\s]+@[^@\s]+$/);

export const DELETION_POLICIES = ['Retain', 'Delete'] as const;
export type DeletionPolicy = (typeof DELETION_POLICIES)[number];

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
}

/** A custom resource as read from the API server. */
export interface Resource<Kind extends string, Spec, Status> {
  apiVersion: typeof API_VERSION;
  kind: Kind;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

/** How the CRD generator and the fake API server describe a kind. */
export interface KindDefinition<Kind extends string = string> {
  kind: Kind;
  plural: string;
  singular: string;
  shortNames: string[];
  /** Namespaced (default) or Cluster. */
  scope?: 'Namespaced' | 'Cluster';
  spec: z.ZodType;
  status: z.ZodType;
  /** Ready after the kind's columns instead of first (Organization: ID, EVENTS, QUOTA, READY). */
  readyLast?: boolean;
  /** Printer columns besides Ready and Age. */
  columns: { name: string; type: 'string' | 'integer' | 'boolean' | 'date'; jsonPath: string; priority?: number; description?: string }[];
}
