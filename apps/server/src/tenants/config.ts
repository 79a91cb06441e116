import { z } from 'zod';
import type { CredentialSource, TokenProject } from '../auth/credentials.js';

/** The file the operator writes into the tenant config Secret (product.md "Kubernetes"). */
export const TENANT_CONFIG_FILE = 'tenants.json';

const TenantProject = z.object({
  projectId: z.number().int().positive(),
  organizationId: z.number().int().positive(),
  name: z.string(),
  token: z.string().min(1).max(200),
  flagSecretSha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits').nullable(),
  resource: z.string(),
});

export const TenantConfigFile = z.object({
  version: z.literal(1),
  generation: z.number().int().min(0),
  projects: z.array(TenantProject),
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

  constructor(readonly generation: number, projects: TenantConfigFile['projects']) {
    for (const p of projects) {
      const project: TokenProject = { id: p.projectId, org_id: p.organizationId, name: p.name, token: p.token };
      this.byToken.set(p.token, project);
      if (p.flagSecretSha256) this.bySecret.set(p.flagSecretSha256, project);
    }
  }

  static empty(): TenantConfig {
    return new TenantConfig(0, []);
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
    return new TenantConfig(parsed.data.generation, parsed.data.projects);
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
