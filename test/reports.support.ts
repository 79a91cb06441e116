import { T0, DAY } from './reference/harness.js';
import type { RefEvent } from './reference/index.js';

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

