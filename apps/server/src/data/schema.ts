import { z } from 'zod';
import { LIMITS } from '../limits.js';
import { DaySchema } from '../http/columns.js';

/** Data-browsing shapes and the routes' query parameters (docs/api.md, "Data"). */
export const EventRowSchema = z
  .object({ id: z.number().int(), event: z.string(), distinct_id: z.string(), time: z.number().int(), properties: z.record(z.string(), z.unknown()) })
  .openapi('EventRow');
export const EventsResultSchema = z.object({ events: z.array(EventRowSchema), total: z.number().int() }).openapi('EventsResult');
export const EventNameCountSchema = z
  .object({ name: z.string(), count: z.number().int(), recent_count: z.number().int(), last_seen: z.number().int() })
  .openapi('EventNameCount');
export const PropertySummarySchema = z.object({ key: z.string(), count: z.number().int(), sampleValues: z.array(z.string()) }).openapi('PropertySummary');
export const UserProfileSchema = z
  .object({
    distinct_id: z.string(),
    properties: z.record(z.string(), z.unknown()),
    first_seen: z.number().int().nullable(),
    last_seen: z.number().int().nullable(),
    event_count: z.number().int(),
  })
  .openapi('UserProfile');
export const UsersResultSchema = z.object({ users: z.array(UserProfileSchema), total: z.number().int() }).openapi('UsersResult');
export const UserDetailSchema = UserProfileSchema.extend({
  sessions: z.number().int(),
  events: z.array(EventRowSchema),
  /** The identity cluster: the canonical id first, then every id linked into it. */
  distinct_ids: z.array(z.string()),
}).openapi('UserDetail');
export const StatsResultSchema = z
  .object({
    events: z.number().int(), users: z.number().int(), profiles: z.number().int(), event_names: z.number().int(),
    events_today: z.number().int(), sessions: z.number().int(),
  })
  .openapi('StatsResult');

const ProjectId = z.union([z.string(), z.number()]).optional();
const limitOf = (max: number, dflt: number) => z.coerce.number().int().min(1).max(max).default(dflt);
const Offset = z.coerce.number().int().min(0).max(1_000_000_000).default(0);
/** A calendar day `YYYY-MM-DD` (UTC; `to` includes the whole day) or Unix ms (a safe integer). */
const Instant = z
  .union([DaySchema, z.string().regex(/^\d{1,15}$/, 'must be YYYY-MM-DD or Unix ms')])
  .optional();

export const EventsQuery = z.object({
  projectId: ProjectId,
  from: Instant,
  to: Instant,
  event: z.string().max(255).optional(),
  distinctId: z.string().max(255).optional(),
  limit: limitOf(LIMITS.dataEventsLimit.max, LIMITS.dataEventsLimit.default),
  offset: Offset,
});
export const ProjectQuery = z.object({ projectId: ProjectId });
export const PropertiesQuery = z.object({ projectId: ProjectId, event: z.string().max(255).optional() });
export const UsersQuery = z.object({
  projectId: ProjectId,
  search: z.string().max(255).optional(),
  limit: limitOf(LIMITS.dataEventsLimit.max, 50),
  offset: Offset,
});
export const UserParams = z.object({ distinctId: z.string().min(1).max(255) });
export const UserQuery = z.object({ projectId: ProjectId, limit: limitOf(LIMITS.dataEventsLimit.max, 100) });
