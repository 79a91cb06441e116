import type { Config } from './config.js';
import type { Db } from './ports/metadata/knex.js';
import type { EventStore } from './ports/events/index.js';
import type { IngestionBuffer } from './ports/buffer/port.js';
import type { Authenticator } from './auth/authenticate.js';
import type { Logger } from './http/errors.js';
import type { OrgStore } from './orgs/store.js';
import type { ProjectStore } from './projects/store.js';
import type { UsageStore } from './usage/store.js';
import type { RateLimits } from './http/rate-limit.js';
import type { TenantConfigWatcher } from './tenants/watcher.js';
import type { AuditStore } from './audit/store.js';
import type { LinkIndex } from './identity/link-index.js';

/**
 * What every domain's routes are built from: the three ports, the shared tenancy stores and the
 * authenticator. A domain builds its own stores from `db`/`events` inside its routes factory.
 */
export interface Deps {
  config: Config;
  version: string;
  log: Logger;
  db: Db;
  events: EventStore;
  buffer: IngestionBuffer;
  auth: Authenticator;
  orgs: OrgStore;
  projects: ProjectStore;
  usage: UsageStore;
  /** The audit log every service writes its changes to, in the change's transaction. */
  audit: AuditStore;
  /**
   * This process's identity links in memory, per project used (flag evaluation reads it; the
   * writers of links and privacy deletions tell it what they changed). Idle until first used.
   */
  links: LinkIndex;
  /** Per-IP and per-project windows (ingestion); token buckets of /api/query/*, /flags/evaluate and GET /flags, /flags/local-evaluation (docs/hardening.md). */
  rateLimits: RateLimits;
  /** The tenant config of TENANT_CONFIG_PATH (Kubernetes mode), consulted before the database for project credentials. */
  tenants?: TenantConfigWatcher;
}
