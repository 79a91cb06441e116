import { createTenant, startTestService, type Tenant, type TestService } from './service.js';
import type { Backend } from './backends.js';
import { loadDataset } from './reference/harness.js';
import type { RefData } from './reference/index.js';

/** A cohort test's service: a tenant holding the test's events, links and profiles, and a second organisation. */
export interface CohortsTenant {
  t: TestService;
  tenant: Tenant;
  other: Tenant;
}

/**
 * The cohort service tests' set-up in the suite it is called in: before all, a service on
 * `backend`, a tenant `name` with `data` loaded (as the reference evaluator reads it) and a
 * tenant `name-other` in another organisation (for the 404s); after all, the service closed.
 * `ready` receives them before the suite's first test.
 */
export function withCohortsTenant(backend: Backend, name: string, data: RefData, ready: (c: CohortsTenant) => void): void {
  let t: TestService | undefined;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend);
    const tenant = await createTenant(t, name);
    const other = await createTenant(t, `${name}-other`);
    await loadDataset(t.svc.deps, tenant.project.id, data);
    ready({ t, tenant, other });
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });
}
