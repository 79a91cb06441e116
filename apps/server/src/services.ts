import type { Deps } from './deps.js';
import type { AuditStore } from './audit/store.js';
import { analysisMetadata, buildAnalyses, type Analyses } from './query/analyses.js';
import { QueryExecutor } from './query/executor.js';
import { openResultsCache, RESULTS_CACHE_DEFAULTS } from './results-cache/index.js';
import { flagsDomain, type FlagsDomain } from './flags/domain.js';
import { ReportService } from './reports/service.js';
import { ReportStore } from './reports/store.js';
import { checkReportQuery, isIrDocument } from './reports/query.js';
import { checkIrCohorts, checkIrQuery } from './reports/ir.js';
import { BoardService } from './boards/service.js';
import { BoardStore } from './boards/store.js';
import { BoardViews } from './boards/views.js';
import { definitionServices, type DefinitionServices } from './definitions/service.js';
import { AnnotationService } from './annotations/service.js';
import { LexiconService } from './lexicon/service.js';
import { LexiconStore } from './lexicon/store.js';
import { PrivacyService } from './privacy/service.js';
import { PrivacyStore } from './privacy/store.js';
import { TenancyBoundary } from './auth/boundary.js';
import { OrgService } from './orgs/service.js';
import { MachineTokenStore } from './orgs/tokens.js';
import { MachineTokenService } from './orgs/token-service.js';
import { ProjectService } from './projects/service.js';
import { FlagSecretService } from './projects/flag-secret.js';
import { ExperimentService } from './experiments/service.js';
import { ExperimentStore } from './experiments/store.js';
import { PropertyMaterializer } from './query/property-materializer.js';

/**
 * The composition root of the domains' services: each is built once here from the ports and the
 * shared stores, and route factories receive what they need from this object (not the database).
 * A domain that writes adds its service here; every write goes through a service, which takes an
 * `Actor` (audit/actor.ts) and records the change in the audit log in the same transaction.
 */
export interface Services {
  audit: AuditStore;
  /** The stores the analysis domains share (definitions, query contexts, cohort membership, annotations). */
  analyses: Analyses;
  /** Every analysis run passes it: rate limit, cost guard, results cache, per-organisation slots (query/executor.ts). */
  executor: QueryExecutor;
  /** Materialises (DuckDB) the event properties experiments' sums and viewed boards read, each organisation within its share. */
  properties: PropertyMaterializer;
  /** Flags' rules and writes, the flag secrets, the live flags and remote evaluation. */
  flags: FlagsDomain;
  reports: ReportService;
  /** Experiments on flags with variants; their results run through `executor`. */
  experiments: ExperimentService;
  boards: BoardService;
  /** When a person last ran each board: the worker warms the cards of boards viewed lately (boards/warming.ts). */
  boardViews: BoardViews;
  /** Derived events, calculated metrics and cohorts. */
  definitions: DefinitionServices;
  annotations: AnnotationService;
  lexicon: LexiconService;
  privacy: PrivacyService;
  /** The boundary between teams: what a write through a Kubernetes resource may touch (auth/boundary.ts). */
  boundary: TenancyBoundary;
  /** Organisations, memberships and group mappings. */
  orgService: OrgService;
  machineTokens: MachineTokenStore;
  tokenService: MachineTokenService;
  projectService: ProjectService;
  flagSecrets: FlagSecretService;
}

export function createServices(deps: Deps): Services {
  const analyses = buildAnalyses(deps.db, deps.events);
  const cache = openResultsCache(deps.db, deps.config.resultsCache ?? RESULTS_CACHE_DEFAULTS, analysisMetadata(analyses), deps.log);
  const { db, audit } = deps;
  const checkReport = async (projectId: number, type: Parameters<typeof checkReportQuery>[2], query: Record<string, unknown>) => {
    const stored = await checkReportQuery(analyses.definitions.metrics, projectId, type, query, deps.config.maxQueryRangeDays, checkIrQuery);
    if (isIrDocument(stored)) await checkIrCohorts(analyses.definitions.cohorts, projectId, stored);
    return stored;
  };
  const tenancy = tenancyServices(deps);
  const flags = flagsDomain(db, deps.links, analyses.membership, audit, tenancy.boundary);
  return {
    audit: deps.audit,
    analyses,
    executor: new QueryExecutor({ config: deps.config, events: deps.events, analyses, rateLimits: deps.rateLimits, projects: deps.projects, cache }),
    properties: new PropertyMaterializer(deps.events, deps.log, deps.config.materializedPerOrganization),
    flags,
    reports: new ReportService(db, new ReportStore(db), audit, checkReport),
    experiments: new ExperimentService(db, new ExperimentStore(db), audit, flagByKey(flags), tenancy.boundary),
    boards: new BoardService(db, new BoardStore(db), audit),
    boardViews: new BoardViews(db),
    definitions: definitionServices(db, analyses.definitions, audit),
    annotations: new AnnotationService(db, analyses.annotations, audit),
    lexicon: new LexiconService(db, new LexiconStore(db), audit),
    privacy: new PrivacyService(db, new PrivacyStore(db), audit),
    ...tenancy,
  };
}

/** An experiment's flag by key, archived ones included. */
const flagByKey = (flags: FlagsDomain) => async (projectId: number, key: string) =>
  (await flags.service.list(projectId, { includeArchived: true })).find((f) => f.key === key);

/** The tenancy domains: organisations and members, machine tokens, projects and flag secrets, all inside one boundary. */
function tenancyServices(deps: Deps) {
  const { db, audit, orgs, projects } = deps;
  const boundary = new TenancyBoundary(orgs, deps.config.tenancyAllowUnmanagedOrgs);
  const machineTokens = new MachineTokenStore(db);
  return {
    boundary,
    orgService: new OrgService(db, orgs, projects, audit, boundary),
    machineTokens,
    tokenService: new MachineTokenService(db, machineTokens, orgs, audit, boundary),
    projectService: new ProjectService(db, projects, orgs, audit, boundary, deps.events, deps.log),
    flagSecrets: new FlagSecretService(db, audit, boundary),
  };
}
