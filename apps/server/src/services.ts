import type { Deps } from './deps.js';
import type { AuditStore } from './audit/store.js';

/**
 * The composition root of the domains' services: each is built once here from the ports and the
 * shared stores, and route factories receive what they need from this object (not the database).
 * A domain that writes adds its service here; every write goes through a service, which takes an
 * `Actor` (audit/actor.ts) and records the change in the audit log in the same transaction.
 */
export interface Services {
  audit: AuditStore;
}

export function createServices(deps: Deps): Services {
  return {
    audit: deps.audit,
  };
}
