/**
 * Every limit of the API (docs/api.md, "Limits"), in one place. Routes import these; nothing else
 * spells the numbers. Rate-limit values are defaults: config.ts lets large installs and tests
 * override them (RATE_LIMIT_* variables).
 */
export const LIMITS = {
  ingestionBatchRecords: 500,
  requestBodyBytes: 1024 * 1024,
  /** `[`/`{` levels a JSON body may nest (http/body.ts); deeper bodies answer 400 before parsing. */
  jsonNestingDepth: 64,
  rateLimitPerIp: { requests: 100, windowMs: 10_000 },
  rateLimitPerProject: { requests: 1000, windowMs: 10_000 },
  /** Token buckets of docs/decisions.md, "Limits" (QUERY_RATE_*, FLAGS_*_RATE_*). */
  queryRate: { perSecond: 10, burst: 30 },
  flagsEvaluateRate: { perSecond: 2000, burst: 4000 },
  flagsLocalRate: { perSecond: 10, burst: 10 },
  retryAfterMinSeconds: 1,
  quotaRetryAfterSeconds: 3600,
  flagsPerProject: 100,
  variantsPerFlag: 10,
  rulesPerFlag: 10,
  overrideIdsPerRule: 50,
  overrideIdLength: 255,
  flagKeyLength: 200,
  /** Metrics one experiment measures (each is a few arrays per unit in the engine's one pass). */
  metricsPerExperiment: 20,
  /** Longest metric window of an experiment (a year). */
  experimentWindowHours: 8784,
  variantKeyLength: { min: 1, max: 200 },
  filtersPerQuery: 20,
  funnelSteps: { min: 2, max: 10 },
  funnelWindowDays: { min: 1, max: 366, default: 30 },
  retentionBuckets: { min: 1, max: 16, default: 8 },
  flowsSteps: { min: 1, max: 5, default: 3 },
  flowsLimit: { min: 1, max: 100, default: 20 },
  cohortCriteria: 20,
  cohortBehaviorCount: { min: 0, max: 1_000_000 },
  cohortBehaviorWindowDays: { min: 0, max: 366 },
  cohortPreviewSample: 10,
  /**
   * Distinct ids a cohort's `static` criteria list, in all, and their total length in characters:
   * membership inlines the list in the engine's statement, which stays under ClickHouse's 256 KiB
   * max_query_size.
   */
  cohortStaticIds: 1000,
  cohortStaticIdsChars: 40_000,
  drilldownPageLimit: { max: 500, default: 50 },
  /** Series × buckets a query may produce (docs/decisions.md, "Limits"); larger ones are refused before they run (QUERY_MAX_CELLS). */
  queryMaxCells: 10_000,
  /** Rows an engine answer may hand to the service (QUERY_MAX_ROWS): bounds breakdowns of unknown cardinality. */
  queryMaxRows: 100_000,
  /** Statement timeout and per-query memory cap on both engines (QUERY_TIMEOUT_MS, QUERY_MAX_MEMORY_MB). */
  queryTimeoutMs: 30_000,
  queryMaxMemoryMb: 2048,
  /** Analyses one organisation runs at once per API process, and how long more wait for a slot (QUERY_CONCURRENCY_PER_ORG, QUERY_QUEUE_MS). */
  queryConcurrencyPerOrg: 4,
  queryQueueMs: 10_000,
  /** A forced Refresh (`refresh: true`) of one board, or one of its cards, by one caller at most this often; beyond, the run answers from the cache (POST /api/boards/{id}/run). */
  boardRefreshIntervalMs: 30_000,
  irBreakdownSegments: { min: 1, max: 100, default: 25 },
  flagAuditLimit: { max: 200, default: 50 },
  /** Rows per page of GET /api/audit-log and /admin/audit-log. */
  auditLogLimit: { max: 200, default: 50 },
  dataEventsLimit: { max: 1000, default: 100 },
} as const;
