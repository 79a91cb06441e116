import path from 'node:path';
import { LIMITS } from './limits.js';
import { natsConfig, type NatsConfig } from './ports/buffer/jetstream-config.js';
import { int, oneOf, type Env } from './env.js';

/** Runtime configuration, read once from the environment (see README "Configuration"). */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  superadminKey?: string;
  databaseUrl?: string;
  clickhouse?: { url: string; database: string; username?: string; password?: string; cluster?: { name: string; replicated: boolean } };
  natsUrl?: string;
  /** JetStream ingestion buffer settings (NATS_* variables; see docs/pipeline.md). */
  nats: NatsConfig;
  /** Port of a separate /metrics + /health listener (0 = none); for the `worker` role, which has no API. */
  metricsPort: number;
  /** OPERATOR_KEY: the operator's credential, accepted only on the routes it calls (auth/operator.ts). */
  operatorKey?: string;
  oidc?: { issuer: string; audience: string; jwksUrl: string; cooldownMs: number; clientId: string; groupsClaim: string };
  /** Directory kubelet projects the tenant config Secret into (tenants.json); see docs/tenant-config.md. */
  tenantConfigPath?: string;
  /** Fallback re-read period of the tenant config, beside fs.watch. */
  tenantConfigPollMs: number;
  /** Trusted reverse proxies whose X-Forwarded-For is believed (exact IPs). */
  trustedProxies: string[];
  /** Browser origins allowed to call /api/* (exact `scheme://host[:port]`); public SDK routes answer any origin. */
  corsOrigins: string[];
  rateLimits: {
    perIp: { requests: number; windowMs: number };
    perProject: { requests: number; windowMs: number };
    /** Token buckets (docs/hardening.md): /api/query/* per credential and project, /flags/evaluate and GET /flags per project token, /flags/local-evaluation per flag secret. */
    query: { perSecond: number; burst: number };
    flagsEvaluate: { perSecond: number; burst: number };
    flagsLocal: { perSecond: number; burst: number };
  };
  /** Event property keys stored in columns of their own (MATERIALIZED_PROPERTIES; docs/analyses.md). */
  materializedProperties: string[];
  /**
   * Most event property keys one organisation's experiments and boards may have materialised at
   * runtime on DuckDB, of the store's 20 (MATERIALIZED_PROPERTIES_PER_ORG; docs/analyses.md).
   */
  materializedPerOrganization: number;
  /** Longest date range a query may span, in days. */
  maxQueryRangeDays: number;
  /** The query cost guard (docs/hardening.md "Query cost guard"). */
  queryGuard: {
    /** Series × buckets an analysis may answer; larger ones are refused before they run. */
    maxCells: number;
    /** Rows an engine answer may hand to the service (breakdowns, whose values are unknown before running). */
    maxRows: number;
    timeoutMs: number;
    maxMemoryBytes: number;
  };
  /**
   * Fairness between organisations (query/engine/concurrency.ts): analyses one organisation runs at once in
   * this API process; more wait up to `queueMs` for a slot, then answer 429.
   */
  queryConcurrency: { perOrg: number; queueMs: number };
  /**
   * Report and board-card answers (results-cache/): RESULTS_CACHE_FRESH_MS, RESULTS_CACHE_MAX_MB per
   * process (0: off); RESULTS_CACHE `shared` (default with DATABASE_URL) also keeps them in the
   * metadata store for every API process, at most RESULTS_CACHE_SHARED_MAX_MB; `process`: memory only.
   */
  resultsCache: { freshMs: number; maxBytes: number; mode: 'shared' | 'process'; sharedMaxBytes: number; partials: boolean };
  /**
   * The worker's warming of recently viewed boards (boards/warming.ts): every BOARD_WARM_INTERVAL_MS
   * (0: off), at most BOARD_WARM_MAX_CARDS_PER_PASS cards computed per project and pass.
   */
  boardWarm: { intervalMs: number; maxCardsPerProject: number };
  /** RETENTION_INTERVAL_MS: how often the worker deletes events past each project's retentionDays (0: never). */
  retentionIntervalMs: number;
  /** AUDIT_RETENTION_DAYS: audit log rows older than this are deleted by the worker's retention pass. */
  auditRetentionDays: number;
  /**
   * TENANCY_ALLOW_UNMANAGED_ORGS: namespaced resources may act in organisations no Organization
   * manages (a migration aid; unsafe between teams: docs/auth.md, "The boundary between teams").
   */
  tenancyAllowUnmanagedOrgs: boolean;
  logLevel: 'silent' | 'error' | 'info';
  /** How long start-up retries NATS, PostgreSQL and ClickHouse set-up before giving up (exit). */
  startupTimeoutMs: number;
}


/** A count where 0 would refuse everything (no query could ever run): a start-up error instead. */
function atLeastOne(env: Env, name: string, fallback: number): number {
  const n = int(env, name, fallback);
  if (n < 1) throw new Error(`${name} must be at least 1 (got ${n})`);
  return n;
}

export function loadConfig(env: Env = process.env): Config {
  const oidcIssuer = env.OIDC_ISSUER;
  const oidc = oidcIssuer
    ? {
        issuer: oidcIssuer,
        audience: env.OIDC_AUDIENCE ?? '',
        jwksUrl: env.OIDC_JWKS_URL ?? new URL('.well-known/jwks.json', oidcIssuer.endsWith('/') ? oidcIssuer : oidcIssuer + '/').toString(),
        cooldownMs: int(env, 'OIDC_JWKS_COOLDOWN_MS', 30_000),
        /** The ID-token claim holding the user's groups (mapped to roles by organisations). */
        groupsClaim: env.OIDC_GROUPS_CLAIM || 'groups',
        /** The web console's OAuth client (public, PKCE); most providers use the audience as client id. */
        clientId: env.OIDC_CLIENT_ID || env.OIDC_AUDIENCE || '',
      }
    : undefined;
  if (oidc && !oidc.audience) throw new Error('OIDC_AUDIENCE is required when OIDC_ISSUER is set');
  return {
    port: int(env, 'PORT', 8080),
    host: env.HOST ?? '0.0.0.0',
    dataDir: path.resolve(env.DATA_DIR ?? './data'),
    superadminKey: env.SUPERADMIN_KEY || undefined,
    operatorKey: env.OPERATOR_KEY || undefined,
    databaseUrl: env.DATABASE_URL || undefined,
    clickhouse: env.CLICKHOUSE_URL
      ? {
          url: env.CLICKHOUSE_URL,
          database: env.CLICKHOUSE_DATABASE ?? 'default',
          username: env.CLICKHOUSE_USER || undefined,
          password: env.CLICKHOUSE_PASSWORD || undefined,
          // Sharded tables ON CLUSTER plus Distributed tables (docs/deploy.md "ClickHouse cluster").
          cluster: env.CLICKHOUSE_CLUSTER
            ? { name: env.CLICKHOUSE_CLUSTER, replicated: ['1', 'true'].includes((env.CLICKHOUSE_REPLICATED ?? '').toLowerCase()) }
            : undefined,
        }
      : undefined,
    natsUrl: env.NATS_URL || undefined,
    nats: natsConfig(env),
    metricsPort: int(env, 'METRICS_PORT', 0),
    oidc,
    tenantConfigPath: env.TENANT_CONFIG_PATH || undefined,
    tenantConfigPollMs: int(env, 'TENANT_CONFIG_POLL_MS', 2000),
    trustedProxies: (env.TRUSTED_PROXIES ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    corsOrigins: (env.CORS_ORIGINS ?? '').split(',').map((s) => s.trim().replace(/\/$/, '')).filter(Boolean),
    rateLimits: {
      perIp: {
        requests: int(env, 'RATE_LIMIT_PER_IP', LIMITS.rateLimitPerIp.requests),
        windowMs: int(env, 'RATE_LIMIT_WINDOW_MS', LIMITS.rateLimitPerIp.windowMs),
      },
      perProject: {
        requests: int(env, 'RATE_LIMIT_PER_PROJECT', LIMITS.rateLimitPerProject.requests),
        windowMs: int(env, 'RATE_LIMIT_WINDOW_MS', LIMITS.rateLimitPerProject.windowMs),
      },
      query: { perSecond: int(env, 'QUERY_RATE_PER_SECOND', LIMITS.queryRate.perSecond), burst: int(env, 'QUERY_RATE_BURST', LIMITS.queryRate.burst) },
      flagsEvaluate: { perSecond: int(env, 'FLAGS_EVALUATE_RATE_PER_SECOND', LIMITS.flagsEvaluateRate.perSecond), burst: int(env, 'FLAGS_EVALUATE_RATE_BURST', LIMITS.flagsEvaluateRate.burst) },
      flagsLocal: { perSecond: int(env, 'FLAGS_LOCAL_RATE_PER_SECOND', LIMITS.flagsLocalRate.perSecond), burst: int(env, 'FLAGS_LOCAL_RATE_BURST', LIMITS.flagsLocalRate.burst) },
    },
    materializedProperties: [...new Set((env.MATERIALIZED_PROPERTIES ?? '').split(',').map((s) => s.trim()).filter(Boolean))],
    materializedPerOrganization: int(env, 'MATERIALIZED_PROPERTIES_PER_ORG', 5),
    maxQueryRangeDays: int(env, 'MAX_QUERY_RANGE_DAYS', 3660),
    resultsCache: {
      freshMs: int(env, 'RESULTS_CACHE_FRESH_MS', 60_000),
      maxBytes: int(env, 'RESULTS_CACHE_MAX_MB', 128) * 1024 * 1024,
      mode: oneOf(env, 'RESULTS_CACHE', ['shared', 'process'], env.DATABASE_URL ? 'shared' : 'process'),
      sharedMaxBytes: int(env, 'RESULTS_CACHE_SHARED_MAX_MB', 512) * 1024 * 1024,
      partials: env.RESULTS_CACHE_PARTIALS !== '0',
    },
    boardWarm: { intervalMs: int(env, 'BOARD_WARM_INTERVAL_MS', 300_000), maxCardsPerProject: int(env, 'BOARD_WARM_MAX_CARDS_PER_PASS', 20) },
    queryGuard: {
      maxCells: int(env, 'QUERY_MAX_CELLS', LIMITS.queryMaxCells),
      maxRows: int(env, 'QUERY_MAX_ROWS', LIMITS.queryMaxRows),
      timeoutMs: int(env, 'QUERY_TIMEOUT_MS', LIMITS.queryTimeoutMs),
      maxMemoryBytes: int(env, 'QUERY_MAX_MEMORY_MB', LIMITS.queryMaxMemoryMb) * 1024 * 1024,
    },
    queryConcurrency: {
      perOrg: atLeastOne(env, 'QUERY_CONCURRENCY_PER_ORG', LIMITS.queryConcurrencyPerOrg),
      queueMs: int(env, 'QUERY_QUEUE_MS', LIMITS.queryQueueMs),
    },
    retentionIntervalMs: int(env, 'RETENTION_INTERVAL_MS', 86_400_000),
    auditRetentionDays: Math.max(1, int(env, 'AUDIT_RETENTION_DAYS', 365)),
    tenancyAllowUnmanagedOrgs: ['1', 'true'].includes((env.TENANCY_ALLOW_UNMANAGED_ORGS ?? '').toLowerCase()),
    logLevel: (env.LOG_LEVEL as Config['logLevel']) ?? 'info',
    startupTimeoutMs: Math.max(1000, int(env, 'STARTUP_TIMEOUT_MS', 120_000)),
  };
}
