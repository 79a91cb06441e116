import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { notFound } from '../http/errors.js';
import { authOf } from '../auth/context.js';
import { resolveProject } from '../auth/project-scope.js';
import { IdentityStore } from '../identity/store.js';
import type { DataStore } from './store.js';
import {
  EventNameCountSchema, EventsQuery, EventsResultSchema, ProjectQuery, PropertiesQuery, PropertySummarySchema, StatsResultSchema,
  UserDetailSchema, UserParams, UserQuery, UsersQuery, UsersResultSchema,
} from './schema.js';

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` (UTC) or Unix ms; `end` makes a date cover its whole day. */
function instant(raw: string | undefined, end: boolean): number | undefined {
  if (raw === undefined) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw);
  const ms = Date.parse(`${raw}T00:00:00Z`);
  if (!Number.isFinite(ms)) return undefined;
  return end ? ms + DAY_MS - 1 : ms;
}

/**
 * Data browsing (docs/api.md, "Data"): events, event names, properties, users and stats of a
 * project, identity-resolved (rows show the cluster's canonical id; a distinctId matches its cluster).
 */
export function dataRoutes(deps: Deps, store: DataStore): RouteSpec[] {
  const identity = new IdentityStore(deps.db);
  const scope = (ctx: Parameters<RouteSpec['handler']>[0]['ctx'], projectId: unknown) => resolveProject(deps.projects, authOf(ctx), projectId);
  const cluster = async (projectId: number, distinctId: string) => {
    const canonical = await identity.canonicalOf(projectId, distinctId);
    return { canonical, members: await identity.clusterOf(projectId, canonical) };
  };
  return [
    route({
      method: 'get', path: '/api/data/events', tag: 'Data', auth: 'api', query: EventsQuery, response: EventsResultSchema,
      summary: 'Stored events, newest first (distinctId matches the whole identity cluster)',
      handler: async ({ ctx, query }) => {
        const project = await scope(ctx, query.projectId);
        const c = query.distinctId !== undefined ? await cluster(project.id, query.distinctId) : undefined;
        return store.listEvents(project.id, {
          from: instant(query.from, false), to: instant(query.to, true), event: query.event,
          members: c?.members, person: c?.canonical, limit: query.limit, offset: query.offset,
        });
      },
    }),
    route({
      method: 'get', path: '/api/data/event-names', tag: 'Data', auth: 'api', query: ProjectQuery, response: z.array(EventNameCountSchema),
      summary: 'Event names with lifetime and last-30-days counts',
      handler: async ({ ctx, query }) => store.eventNames((await scope(ctx, query.projectId)).id, Date.now() - 30 * DAY_MS),
    }),
    route({
      method: 'get', path: '/api/data/properties', tag: 'Data', auth: 'api', query: PropertiesQuery, response: z.array(PropertySummarySchema),
      summary: 'Property keys seen on events (optionally of one event name) with counts and up to 5 sample values',
      handler: async ({ ctx, query }) => store.properties((await scope(ctx, query.projectId)).id, query.event),
    }),
    route({
      method: 'get', path: '/api/data/users', tag: 'Data', auth: 'api', query: UsersQuery, response: UsersResultSchema,
      summary: 'Identities (canonical ids) with their profiles, most recently seen first; search matches ids and profile values, an id equal to the search (any case) first',
      handler: async ({ ctx, query }) => store.users((await scope(ctx, query.projectId)).id, query),
    }),
    route({
      method: 'get', path: '/api/data/users/{distinctId}', tag: 'Data', auth: 'api', params: UserParams, query: UserQuery, response: UserDetailSchema,
      summary: "One identity: profile, sessions over its whole history and its latest events",
      handler: async ({ ctx, params, query }) => {
        const project = await scope(ctx, query.projectId);
        const { canonical, members } = await cluster(project.id, params.distinctId);
        const [profile, sessions, events] = await Promise.all([
          store.user(project.id, canonical, members),
          store.sessionsOf(project.id, canonical, members),
          store.listEvents(project.id, { members, person: canonical, limit: query.limit, offset: 0 }),
        ]);
        if (!profile) throw notFound('user');
        return { ...profile, sessions, events: events.events, distinct_ids: members };
      },
    }),
    route({
      method: 'get', path: '/api/data/stats', tag: 'Data', auth: 'api', query: ProjectQuery, response: StatsResultSchema,
      summary: 'Totals: events, users, profiles, event names, events today (UTC), sessions started in the last 7 days',
      handler: async ({ ctx, query }) => store.stats((await scope(ctx, query.projectId)).id, Date.now()),
    }),
  ];
}
