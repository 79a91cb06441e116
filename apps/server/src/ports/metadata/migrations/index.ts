import type { Knex } from 'knex';
import { foundation } from './0001_foundation.js';
import { identity } from './0002_identity.js';
import { analyses } from './0004_analyses.js';
import { flags } from './0005_flags.js';
import { usageOrg } from './0006_usage_org.js';
import { managedProjectsAndTokens } from './0007_managed_projects_and_tokens.js';
import { flagsManaged } from './0008_flags_managed.js';
import { reportsBoards } from './0009_reports_boards.js';
import { privacy } from './0010_privacy.js';
import { rateLimits } from './0011_rate_limits.js';
import { identityLinkSeq } from './0012_identity_link_seq.js';
import { rateLimitBatch } from './0013_rate_limit_batch.js';
import { flagRevisions } from './0014_flag_revisions.js';
import { rateLimitBatchAtOnce } from './0015_rate_limit_batch_at_once.js';
import { resultsVersions } from './0016_results_versions.js';
import { tenancy } from './0017_tenancy.js';
import { auditLog } from './0018_audit_log.js';
import { experiments } from './0019_experiments.js';
import { boardVersions } from './0020_board_versions.js';
import { experimentsManaged } from './0021_experiments_managed.js';
import { boardViewsResultsCache } from './0022_board_views_results_cache.js';
import { boardCardDisplay } from './0024_board_card_display.js';
import { boardWarmState } from './0025_board_warm_state.js';

export interface Migration {
  name: string;
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

/**
 * Every metadata migration, in order. A domain adds its own file (`NNNN_<domain>.ts`) and one line
 * here; names must sort in the order they are applied.
 */
export const migrations: Migration[] = [foundation, identity, analyses, flags, usageOrg, managedProjectsAndTokens, flagsManaged, reportsBoards, privacy, rateLimits, identityLinkSeq, rateLimitBatch, flagRevisions, rateLimitBatchAtOnce, resultsVersions, tenancy, auditLog, experiments, boardVersions, experimentsManaged, boardViewsResultsCache, boardCardDisplay, boardWarmState];
