import { T0, DAY, loadDataset } from './reference/harness.js';
import type { RefEvent } from './reference/index.js';
import type { Backend } from './backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from './service.js';

/** The events the reports and boards suites run their reports over (2024-01-01 is a Monday). */
const H = 3_600_000;
let seq = 0;
const ev = (event: string, distinct_id: string, time: number, props: Record<string, string> = {}): RefEvent => ({ event, distinct_id, time, insert_id: `r${++seq}`, props });

export const REPORT_EVENTS: RefEvent[] = [
  ev('view', 'u1', T0 + 1 * H, { country: 'fr' }),
  ev('signup', 'u1', T0 + 2 * H),
  ev('buy', 'u1', T0 + DAY + 3 * H, { country: 'fr' }),
  ev('view', 'u2', T0 + DAY + 1 * H, { country: 'de' }),
  ev('signup', 'u2', T0 + 2 * DAY + 1 * H),
  ev('view', 'u3', T0 + 3 * DAY + 1 * H, { country: 'fr' }),
  ev('view', 'u3', T0 + 9 * DAY + 1 * H, { country: 'fr' }),
  ev('buy', 'u3', T0 + 9 * DAY + 2 * H),
];


/** A service with two tenants (`<prefix>`, `<prefix>-other`); REPORT_EVENTS loaded into the first's project. */
export interface ReportsWorld {
  t: TestService;
  tenant: Tenant;
  other: Tenant;
  pid: number;
}

/**
 * The setup the reports, boards, annotations and lexicon suites share: registers the `before`
 * that builds the world (handed to `set`) and the `after` that closes it. A suite's own `before`
 * hooks run after this one. `start` makes the service: a service of the suite's own by default,
 * `sharedService` for suites that work only inside these tenants (its close does nothing).
 */
export function reportsWorld(backend: Backend, prefix: string, set: (w: ReportsWorld) => void, start: (b: Backend) => Promise<TestService> = startTestService): void {
  let t: TestService | undefined;
  before(async function () {
    this.timeout(60_000);
    t = await start(backend);
    const tenant = await createTenant(t, prefix);
    const other = await createTenant(t, `${prefix}-other`);
    await loadDataset(t.svc.deps, tenant.project.id, { events: REPORT_EVENTS, links: [] });
    set({ t, tenant, other, pid: tenant.project.id });
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });
}
