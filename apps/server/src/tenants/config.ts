import { z } from 'zod';
import type { CredentialSource, TokenProject } from '../auth/credentials.js';

/** The file the operator writes into the tenant config Secret (docs/decisions.md, "Kubernetes contract"). */
export const TENANT_CONFIG_FILE = 'tenants.json';

const TenantProject = z.object({
  projectId: z.number().int().positive(),
  organizationId: z.number().int().positive(),
  name: z.string(),
  token: z.string().min(1).max(200),
  flagSecretSha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits').nullable(),
  resource: z.string(),
  /** This project's ingestion requests per 10 s (instead of RATE_LIMIT_PER_PROJECT). */
  rateLimit: z.object({ requestsPer10Seconds: z.number().int().min(1).max(1_000_000) }).nullable().optional(),
  /** Informational here: the worker's retention job reads the database's value. */
  retentionDays: z.number().int().min(1).max(3650).nullable().optional(),
});

const TenantOrganization = z.object({
  organizationId: z.number().int().positive(),
  name: z.string(),
  monthlyEventQuota: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable(),
  resource: z.string(),
});

/** Members added after the first release are optional, so files of older operators still parse. */
export const TenantConfigFile = z.object({
  version: z.literal(1),
  generation: z.number().int().min(0),
  projects: z.array(TenantProject),
  organizations: z.array(TenantOrganization).optional(),
});
export type TenantConfigFile = z.infer<typeof TenantConfigFile>;

/**
 * One applied tenant config: project tokens and flag-secret hashes of the listed projects, looked
 * up from memory. Immutable; a new generation replaces the whole object, so a request sees one
 * config or the next, never a mix.
 */
export class TenantConfig implements CredentialSource {
  private byToken = new Map<string, TokenProject>();
  private bySecret = new Map<string, TokenProject>();
  private quotas = new Map<number, number | null>();

  constructor(readonly generation: number, projects: TenantConfigFile['projects'], organizations: TenantConfigFile['organizations'] = []) {
    for (const p of projects) {
      const project: TokenProject = { id: p.projectId, org_id: p.organizationId, name: p.name, token: p.token };
      if (p.rateLimit) project.rate_limit = p.rateLimit.requestsPer10Seconds;
      this.byToken.set(p.token, project);
      if (p.flagSecretSha256) this.bySecret.set(p.flagSecretSha256, project);
    }
    for (const o of organizations) this.quotas.set(o.organizationId, o.monthlyEventQuota);
  }

  static empty(): TenantConfig {
    return new TenantConfig(0, []);
  }

  /** A listed organisation's monthly quota (null: none); undefined when not listed (the database's then). */
  quotaOf(orgId: number): number | null | undefined {
    return this.quotas.get(orgId);
  }

  /** Parses the file's text; throws an Error naming the problem (invalid JSON or the first bad field). */
  static parse(text: string): TenantConfig {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new Error(`${TENANT_CONFIG_FILE}: invalid JSON (${err instanceof Error ? err.message : String(err)})`);
    }
    const parsed = TenantConfigFile.safeParse(raw);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw new Error(`${TENANT_CONFIG_FILE}: ${i.path.length ? i.path.join('.') + ': ' : ''}${i.message}`);
    }
    const tokens = new Set<string>();
    for (const [n, p] of parsed.data.projects.entries()) {
      if (tokens.has(p.token)) throw new Error(`${TENANT_CONFIG_FILE}: projects.${n}.token: listed twice`);
      tokens.add(p.token);
    }
    return new TenantConfig(parsed.data.generation, parsed.data.projects, parsed.data.organizations);
  }

  get projects(): number {
    return this.byToken.size;
  }

  projectByToken(token: string): TokenProject | undefined {
    return this.byToken.get(token);
  }

  projectByFlagSecretSha256(sha256Hex: string): TokenProject | undefined {
    return this.bySecret.get(sha256Hex);
  }
}
