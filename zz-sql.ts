import { materializedProperties } from './apps/server/src/ports/events/schema.js';
import { dialectFor } from './apps/server/src/query/dialects/index.js';
import { EventMatcher } from './apps/server/src/query/filters.js';
import { funnelSql } from './apps/server/src/query/funnel.js';
import { sessionsSql } from './apps/server/src/query/sessions.js';
import { retentionSql } from './apps/server/src/query/retention.js';
import { segmentationSql } from './apps/server/src/query/segmentation.js';
const which = process.argv[2];
const d = dialectFor((process.env.DIALECT ?? 'clickhouse') as never, materializedProperties([]));
const T0 = Date.UTC(2024, 0, 1);
const range = { fromMs: T0, toEndMs: T0 + 90 * 86_400_000 };
const q = { d, projectId: 1, events: new EventMatcher(d, new Map()), overrides: false };
const sql = which === 'funnel' ? funnelSql(q as never, { steps: ['e0', 'e1', 'e2'], windowDays: 7 } as never, range)
  : which === 'sessions' ? (sessionsSql as any)(q, 'day', range)
  : which === 'retention' ? (retentionSql as any)(q, { bornEvent: 'e3', returnEvent: 'e0', unit: 'week', buckets: 8 }, range)
  : (segmentationSql as any)(q, { event: '$all_events', unit: 'week', type: 'unique' }, range);
console.log(typeof sql === 'string' ? sql : JSON.stringify(sql));
