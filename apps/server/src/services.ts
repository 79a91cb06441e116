import type { Deps } from './deps.js';
import type { AuditStore } from './audit/store.js';
import { analysisMetadata, buildAnalyses, type Analyses } from './query/analyses.js';
import { QueryExecutor } from './query/executor.js';
import { DataVersions, ResultsCache, RESULTS_CACHE_DEFAULTS } from './results-cache/index.js';
import { TenancyBoundary } from './auth/boundary.js';
import { OrgService } from './orgs/service.js';
import { MachineTokenStore } from './orgs/tokens.js';
import { MachineTokenService } from './orgs/token-service.js';
import { ProjectService } from './projects/service.js';
import { FlagSecretService } from './projects/flag-secret.js';

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
  const cache = new ResultsCache(new DataVersions(deps.db), deps.config.resultsCache ?? RESULTS_CACHE_DEFAULTS, analysisMetadata(analyses));
  return {
    audit: deps.audit,
    analyses,
    executor: new QueryExecutor({ config: deps.config, events: deps.events, analyses, rateLimits: deps.rateLimits, projects: deps.projects, cache }),
    ...tenancyServices(deps),
  };
}

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
