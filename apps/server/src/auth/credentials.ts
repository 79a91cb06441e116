import type { Context } from 'koa';
import { createHash } from 'node:crypto';
import { AppError, invalidToken, unauthorized } from '../http/errors.js';
import type { ProjectStore } from '../projects/store.js';

/** What a project token or flag secret resolves to: enough to route, limit and count. */
export interface TokenProject {
  id: number;
  org_id: number | null;
  name: string;
  token: string;
  /** The project's own ingestion requests per 10 s (tenant config or database), or null/absent: the default. */
  rate_limit?: number | null;
}

/**
 * An in-memory source of project credentials consulted before the database (the tenant config
 * written by the operator: tenants/config.ts). Answers synchronously; undefined means "not
 * listed here", never "refused".
 */
export interface CredentialSource {
  projectByToken(token: string): TokenProject | undefined;
  projectByFlagSecretSha256(sha256Hex: string): TokenProject | undefined;
}

/** Resolves the project tokens of one request: header `X-Service-Token` or per-record `token`. */
export interface ProjectTokens {
  /**
   * The project of each record's token (undefined: the header token). Any missing, unknown or
   * over-long token refuses the whole request with `401 invalid token`; an empty list still
   * needs a valid header token.
   */
  projects(tokens: Array<string | undefined>): Promise<TokenProject[]>;
  /** The project of one token (a body `token`, else the header). */
  project(token?: string): Promise<TokenProject>;
}

declare module 'koa' {
  interface DefaultState {
    projectTokens?: ProjectTokens;
    flagSecretProject?: TokenProject;
  }
}

export const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');
export const invalidFlagSecret = () => new AppError(401, 'invalid flag secret');

/** Longest token looked up (a project token is a uuid; anything much longer is refused unread). */
const MAX_TOKEN_LENGTH = 200;

/**
 * The one place project tokens and flag secrets are resolved: the in-memory source first (no
 * database read for listed projects), then the project store (its shared token cache; flag
 * secrets are never cached, so a rotated or revoked secret fails at once).
 */
export class ProjectCredentials {
  private memory: CredentialSource | undefined;

  constructor(private projects: ProjectStore) {}

  /** Plugs in (or removes) the in-memory source. */
  use(source: CredentialSource | undefined): void {
    this.memory = source;
  }

  async byToken(token: string): Promise<TokenProject | undefined> {
    return this.memory?.projectByToken(token) ?? (await this.projects.byTokenCached(token));
  }

  async byFlagSecret(secret: string): Promise<TokenProject | undefined> {
    const hash = sha256Hex(secret);
    return this.memory?.projectByFlagSecretSha256(hash) ?? (await this.projects.byFlagSecretHash(hash));
  }

  /** The resolver handed to a `projectToken` route. */
  forRequest(ctx: Context): ProjectTokens {
    const header = ctx.get('x-service-token') || undefined;
    const one = async (token: string | undefined): Promise<TokenProject> => {
      if (!token || token.length > MAX_TOKEN_LENGTH) throw invalidToken();
      const project = await this.byToken(token);
      if (!project) throw invalidToken();
      return project;
    };
    return {
      project: (token) => one(token || header),
      projects: async (tokens) => {
        const effective = tokens.map((t) => t ?? header);
        const unique = effective.length ? [...new Set(effective)] : [header];
        const found = new Map<string | undefined, TokenProject>();
        for (const t of unique) found.set(t, await one(t));
        return effective.map((t) => found.get(t)!);
      },
    };
  }
}

/**
 * The user name of an `Authorization: Basic` header (`<user>:<password>`, base64), with its
 * password; undefined when the header is absent or not Basic. Mixpanel's clients send their
 * token this way (the flags module: `<project token>:`; `import`: `<secret>:`).
 */
export function basicCredentials(ctx: Context): { user: string; password: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=_-]{1,1000})\s*$/i.exec(ctx.get('authorization'));
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? { user: decoded, password: '' } : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** The project-token resolver of a `projectToken` route. */
export function projectTokensOf(ctx: Context): ProjectTokens {
  const tokens = ctx.state.projectTokens;
  if (!tokens) throw invalidToken();
  return tokens;
}

/** The project whose flag secret authenticated a `flagSecret` route. */
export function flagSecretProjectOf(ctx: Context): TokenProject {
  const project = ctx.state.flagSecretProject;
  if (!project) throw unauthorized();
  return project;
}
