import { createHash } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { withCondition, statusDiffers } from '../conditions.js';
import { TENANT_CONFIG_KEY, keyOf, type AnyResource } from '../kinds.js';
import type { ProjectResource } from '../kinds/project.js';
import { statusOf } from '../kube.js';
import { flagSecretSecretKey, flagSecretSecretName, winningFlagSecret, type ReconcileContext } from './context.js';

/**
 * The tenant config Secret (`TENANT_CONFIG_SECRET` in POD_NAMESPACE, key tenants.json) that API
 * pods mount: every Project that has its project, with the SHA-256 of its FlagSecret's secret.
 * Computed from the caches, so it follows every Project/FlagSecret/Secret change and deletion;
 * written only when the content hash differs from the one recorded on the Secret. A config over
 * the size limit is not written: the last good one stays, and the Projects it would have added
 * or changed get the condition TenantConfig=False, reason TooLarge.
 */
export interface TenantEntry {
  projectId: number;
  organizationId: number;
  name: string;
  token: string;
  flagSecretSha256: string | null;
  resource: string;
  /** Present only when the Project sets them (old readers ignore them). */
  rateLimit?: { requestsPer10Seconds: number };
  retentionDays?: number;
}

export interface TenantOrganization {
  organizationId: number;
  name: string;
  monthlyEventQuota: number | null;
  resource: string;
}

export const CONTENT_HASH_ANNOTATION = 'analytics.tally.dev/content-sha256';
export const TENANT_CONDITION = 'TenantConfig';

export class TenantConfigWriter {
  private lastHash = '';
  generation = 0;
  private seeded = false;
  /** Project key → project id whose flag secret the last written config had (until its FlagSecret is reconciled). */
  private readonly seededFlagSecrets = new Map<string, number>();

  constructor(private readonly ctx: ReconcileContext) {}

  /**
   * After a restart the records are empty, and a config written from them would cut off every
   * tenant's ingestion until each Project is reconciled again (longer if the service's API is
   * down). So the records start from the last written config, which is the operator's own
   * output in its own namespace (tenants cannot write it, unlike a status), for every resource
   * not reconciled yet; and the config is written only once every Organization, Project and
   * FlagSecret in the caches has been reconciled once since start (a transient failure keeps its
   * record). Returns false when the Secret could not be read (seeding is tried again at sync).
   */
  async seed(): Promise<boolean> {
    const { ctx } = this;
    let secret: V1Secret | undefined;
    try {
      secret = await ctx.kube.readSecret(ctx.config.podNamespace, ctx.config.tenantConfigSecret);
    } catch (err) {
      ctx.log.error('tenant config not read at start: records start empty', { err: String(err) });
      return false;
    }
    this.seedFrom(secret);
    return true;
  }

  private seedFrom(secret: V1Secret | undefined): void {
    const { records } = this.ctx;
    const config = decode(secret) as { projects?: unknown; organizations?: unknown } | undefined;
    const list = (x: unknown) => (Array.isArray(x) ? x : []) as Record<string, unknown>[];
    const id = (x: unknown) => (typeof x === 'number' && Number.isSafeInteger(x) && x > 0 ? x : undefined);
    for (const o of list(config?.organizations)) {
      const organizationId = id(o.organizationId);
      if (typeof o.resource !== 'string' || !organizationId || records.reconciled.has(o.resource) || records.organizations.has(o.resource)) continue;
      records.organizations.set(o.resource, organizationId);
    }
    for (const e of list(config?.projects)) {
      const projectId = id(e.projectId);
      const organizationId = id(e.organizationId);
      if (typeof e.resource !== 'string' || !projectId || !organizationId || typeof e.token !== 'string') continue;
      if (!records.reconciled.has(e.resource) && !records.projects.has(e.resource)) records.projects.set(e.resource, { projectId, organizationId, token: e.token });
      if (typeof e.flagSecretSha256 === 'string') this.seededFlagSecrets.set(e.resource, projectId);
    }
    this.seeded = true;
  }

  /** Every object of the kinds the config is made of has been reconciled once since start. */
  private allReconciled(): boolean {
    const { ctx } = this;
    const caches = [ctx.cache('Organization'), ctx.cache('Project'), ctx.cache('FlagSecret')] as { list(): AnyResource[] }[];
    return caches.every((c) => c.list().every((o) => o.metadata.deletionTimestamp || ctx.records.reconciled.has(keyOf(o))));
  }

  /** Forget the last hash (the Secret was changed or deleted by someone else): the next sync reads it. */
  invalidate(): void {
    this.lastHash = '';
  }

  entries(): TenantEntry[] {
    const { ctx } = this;
    const out: TenantEntry[] = [];
    for (const p of ctx.cache('Project').list()) {
      // The records (what the service said), never status: a status may have been written by anyone.
      const record = ctx.records.projects.get(keyOf(p));
      if (p.metadata.deletionTimestamp || !record) continue;
      const { projectId, organizationId, token } = record;
      const entry: TenantEntry = {
        projectId,
        organizationId,
        name: p.spec.displayName,
        token,
        flagSecretSha256: this.flagSecretSha(p, projectId),
        resource: keyOf(p),
      };
      if (p.spec.rateLimit) entry.rateLimit = { requestsPer10Seconds: p.spec.rateLimit.requestsPer10Seconds };
      if (p.spec.retentionDays) entry.retentionDays = p.spec.retentionDays;
      out.push(entry);
    }
    return out.sort((a, b) => a.resource.localeCompare(b.resource));
  }

  /** Organizations that have their organisation: name and quota, for API pods to apply from memory. */
  organizations(): TenantOrganization[] {
    const out: TenantOrganization[] = [];
    for (const o of this.ctx.cache('Organization').list()) {
      const organizationId = this.ctx.records.organizations.get(keyOf(o));
      if (o.metadata.deletionTimestamp || !organizationId) continue;
      out.push({ organizationId, name: o.spec.displayName, monthlyEventQuota: o.spec.monthlyEventQuota ?? null, resource: keyOf(o) });
    }
    return out.sort((a, b) => a.resource.localeCompare(b.resource));
  }

  private flagSecretSha(p: ProjectResource, projectId: number): string | null {
    const { records } = this.ctx;
    const fs = winningFlagSecret(this.ctx, p.metadata.namespace, p.metadata.name);
    if (!fs) return null;
    const key = keyOf(fs);
    const set = records.reconciled.has(key) ? records.flagSecrets.get(key) : records.flagSecrets.get(key) ?? this.seededFlagSecrets.get(keyOf(p));
    if (set !== projectId) return null;
    const digest = this.ctx.secrets.get(p.metadata.namespace, flagSecretSecretName(fs));
    return digest?.sha256[flagSecretSecretKey(fs)] ?? null;
  }

  /** Writes the Secret if its content changed; false when it must be tried again (a write conflict, or not every resource reconciled yet). */
  async sync(): Promise<boolean> {
    const { ctx } = this;
    const { podNamespace: namespace, tenantConfigSecret: name, tenantConfigMaxBytes } = ctx.config;
    if (!this.seeded && !(await this.seed())) return false;
    if (!this.allReconciled()) return false;
    const projects = this.entries();
    const organizations = this.organizations();
    // Without Organizations the content (and its hash) is what it was before they existed.
    const content = organizations.length > 0 ? { projects, organizations } : { projects };
    const hash = createHash('sha256').update(JSON.stringify(organizations.length > 0 ? content : projects)).digest('hex');
    if (hash === this.lastHash) return true;
    const existing = await ctx.kube.readSecret(namespace, name);
    const existingHash = existing?.metadata?.annotations?.[CONTENT_HASH_ANNOTATION];
    const existingGeneration = generationOf(existing);
    if (existing && existingHash === hash) {
      this.lastHash = hash;
      this.generation = existingGeneration;
      ctx.metrics.tenantConfigGeneration.set(existingGeneration);
      await this.markProjects(undefined);
      return true;
    }
    const generation = existingGeneration + 1;
    const text = JSON.stringify({ version: 1, generation, ...content });
    const bytes = Buffer.byteLength(text);
    ctx.metrics.tenantConfigBytes.set(bytes);
    if (bytes > tenantConfigMaxBytes) {
      const message = `tenant config would be ${bytes} bytes, over the limit of ${tenantConfigMaxBytes} (Kubernetes refuses objects over 1 MiB); the last written one (generation ${existingGeneration}) stays`;
      ctx.log.error('tenant config too large: not written', { bytes, limit: tenantConfigMaxBytes });
      const written = new Map(parseProjects(existing).map((e) => [e.resource, JSON.stringify(e)]));
      const refused = projects.filter((e) => written.get(e.resource) !== JSON.stringify(e));
      await this.markProjects({ refused: new Set(refused.map((e) => e.resource)), message });
      this.lastHash = hash;
      return true;
    }
    const body: V1Secret = {
      apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
      metadata: {
        name, namespace,
        labels: { 'app.kubernetes.io/managed-by': 'tally-operator' },
        annotations: { [CONTENT_HASH_ANNOTATION]: hash },
      },
      data: { [TENANT_CONFIG_KEY]: Buffer.from(text).toString('base64') },
    };
    try {
      if (existing) {
        body.metadata!.resourceVersion = existing.metadata?.resourceVersion;
        body.metadata!.labels = { ...existing.metadata?.labels, ...body.metadata!.labels };
        body.metadata!.annotations = { ...existing.metadata?.annotations, ...body.metadata!.annotations };
        await ctx.kube.replaceSecret(namespace, name, body);
      } else {
        await ctx.kube.createSecret(namespace, body);
      }
    } catch (err) {
      if (statusOf(err) === 409) return false;
      throw err;
    }
    this.lastHash = hash;
    this.generation = generation;
    ctx.metrics.tenantConfigWrites.inc();
    ctx.metrics.tenantConfigGeneration.set(generation);
    ctx.log.info('tenant config written', { generation, projects: projects.length, bytes });
    await this.markProjects(undefined);
    return true;
  }

  /** The TenantConfig condition: present (False) only while a Project's entry was refused. */
  private async markProjects(problem: { refused: Set<string>; message: string } | undefined): Promise<void> {
    const { ctx } = this;
    for (const p of ctx.cache('Project').list()) {
      const refused = problem?.refused.has(keyOf(p)) ?? false;
      const current = p.status?.conditions ?? [];
      const has = current.some((c) => c.type === TENANT_CONDITION);
      if (!refused && !has) continue;
      const conditions = refused
        ? withCondition(current, { type: TENANT_CONDITION, status: 'False', reason: 'TooLarge', message: problem!.message, observedGeneration: p.metadata.generation })
        : current.filter((c) => c.type !== TENANT_CONDITION);
      if (!statusDiffers(p.status as never, { ...(p.status ?? {}), conditions } as never)) continue;
      await ctx.kube.patchStatus('Project', p.metadata.namespace, p.metadata.name, { conditions }).catch((err) => {
        ctx.log.error('tenant config condition not written', { project: keyOf(p), err: String(err) });
      });
    }
  }
}

function decode(secret: V1Secret | undefined): unknown {
  const raw = secret?.data?.[TENANT_CONFIG_KEY];
  if (!raw) return undefined;
  try { return JSON.parse(Buffer.from(raw, 'base64').toString('utf8')); } catch { return undefined; }
}

function generationOf(secret: V1Secret | undefined): number {
  const g = (decode(secret) as { generation?: unknown } | undefined)?.generation;
  return typeof g === 'number' && Number.isInteger(g) && g >= 0 ? g : 0;
}

function parseProjects(secret: V1Secret | undefined): TenantEntry[] {
  const p = (decode(secret) as { projects?: unknown } | undefined)?.projects;
  return Array.isArray(p) ? (p as TenantEntry[]) : [];
}
