import type { z } from 'zod';
import { queryString, request } from '../../api.js';
import type { AnnotationSchema, LexiconEntryBody } from '@tally-analytics/server/schemas';
import type { LexiconEvent, LexiconProperty } from '../../types.js';

/** What a lexicon PUT takes (members left out keep their value). */
export type LexiconWrite = z.infer<typeof LexiconEntryBody>;
export type Annotation = z.infer<typeof AnnotationSchema>;

export const lexiconApi = {
  events: (projectId: string) => request<LexiconEvent[]>('GET', `/api/lexicon/events${queryString({ projectId })}`),
  properties: (projectId: string) => request<LexiconProperty[]>('GET', `/api/lexicon/properties${queryString({ projectId })}`),
  writeEvent: (projectId: string, name: string, body: LexiconWrite) =>
    request<LexiconEvent>('PUT', `/api/lexicon/events/${encodeURIComponent(name)}${queryString({ projectId })}`, body),
  writeProperty: (projectId: string, key: string, body: LexiconWrite) =>
    request<LexiconProperty>('PUT', `/api/lexicon/properties/${encodeURIComponent(key)}${queryString({ projectId })}`, body),
};

export const annotationsApi = {
  list: (projectId: string) => request<Annotation[]>('GET', `/api/annotations${queryString({ projectId })}`),
  create: (projectId: string, body: { date: string; description: string }) => request<Annotation>('POST', `/api/annotations${queryString({ projectId })}`, body),
  update: (id: number, body: { date?: string; description?: string }) => request<Annotation>('PUT', `/api/annotations/${id}`, body),
  remove: (id: number) => request<{ ok: true }>('DELETE', `/api/annotations/${id}`),
};
