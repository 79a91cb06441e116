import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { actorOf } from '../audit/actor.js';
import { resolveProject } from '../auth/project-scope.js';
import type { LexiconService } from './service.js';
import type { DataStore } from '../data/store.js';
import { lexiconEvents, lexiconProperties } from './merge.js';
import {
  EventNameParams, LexiconEntryBody, LexiconEventSchema, LexiconListQuery, LexiconPropertySchema, PropertyKeyParams,
} from './schema.js';

/**
 * The lexicon (data dictionary): observed event names and property keys merged with their
 * entries. Every role reads; member and above write. Hidden names stay listed, flagged, so a
 * client can filter them out of pickers and still show them where data carries them.
 */
export function lexiconRoutes(deps: Deps, { service, data }: { service: LexiconService; data: DataStore }): RouteSpec[] {
  const { store } = service;
  return [
    route({
      method: 'get', path: '/api/lexicon/events', tag: 'Lexicon', auth: 'api', query: LexiconListQuery, response: z.array(LexiconEventSchema),
      summary: 'Observed event names merged with their lexicon entries (hidden ones flagged, not removed)',
      handler: async ({ ctx, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), query.projectId);
        return lexiconEvents(data, store, project.id);
      },
    }),
    route({
      method: 'get', path: '/api/lexicon/properties', tag: 'Lexicon', auth: 'api', query: LexiconListQuery, response: z.array(LexiconPropertySchema),
      summary: 'Observed event property keys merged with their lexicon entries (hidden ones flagged, not removed)',
      handler: async ({ ctx, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), query.projectId);
        return lexiconProperties(data, store, project.id);
      },
    }),
    route({
      method: 'put', path: '/api/lexicon/events/{name}', tag: 'Lexicon', auth: 'api', params: EventNameParams, query: LexiconListQuery,
      body: LexiconEntryBody, response: LexiconEventSchema,
      summary: "Creates or updates an event name's entry (member); members left out keep their value",
      handler: async ({ ctx, params, query, body }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(deps.projects, auth, query.projectId);
        await service.write(actorOf(ctx), project.id, 'event', params.name, body);
        return (await lexiconEvents(data, store, project.id, params.name))[0];
      },
    }),
    route({
      method: 'put', path: '/api/lexicon/properties/{key}', tag: 'Lexicon', auth: 'api', params: PropertyKeyParams, query: LexiconListQuery,
      body: LexiconEntryBody, response: LexiconPropertySchema,
      summary: "Creates or updates a property key's entry (member); members left out keep their value",
      handler: async ({ ctx, params, query, body }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(deps.projects, auth, query.projectId);
        await service.write(actorOf(ctx), project.id, 'property', params.key, body);
        return (await lexiconProperties(data, store, project.id, params.key))[0];
      },
    }),
  ];
}
