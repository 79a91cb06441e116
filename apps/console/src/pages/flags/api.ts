import type { z } from 'zod';
import { queryString, request } from '../../api.js';
import type { FeatureFlagSchema, FlagEventSchema, FlagResultSchema, FlagRuleSchema, FlagVariantSchema } from '@tally-analytics/server/schemas';

/** The flag shapes, inferred from the server's schemas (type-only: nothing of the server is bundled). */
export type Flag = z.infer<typeof FeatureFlagSchema>;
export type FlagVariant = z.infer<typeof FlagVariantSchema>;
export type FlagRule = z.infer<typeof FlagRuleSchema>;
export type FlagEvent = z.infer<typeof FlagEventSchema>;
export type FlagResult = z.infer<typeof FlagResultSchema>;
export type FlagType = Flag['type'];
export const FLAG_TYPES: FlagType[] = ['release', 'experiment', 'operational', 'kill_switch', 'permission'];

export type FlagWrite = Partial<Pick<Flag, 'name' | 'description' | 'active' | 'type' | 'variants' | 'rules'>>;

export const flagsApi = {
  list: (projectId: string, archived: boolean) => request<Flag[]>('GET', `/api/flags${queryString({ projectId, archived: archived ? 1 : undefined })}`),
  get: (id: number | string) => request<Flag>('GET', `/api/flags/${id}`),
  create: (projectId: string, body: { key: string; name: string } & FlagWrite) => request<Flag>('POST', `/api/flags${queryString({ projectId })}`, body),
  update: (id: number, body: FlagWrite) => request<Flag>('PUT', `/api/flags/${id}`, body),
  archive: (id: number) => request<Flag>('POST', `/api/flags/${id}/archive`),
  revive: (id: number) => request<Flag>('POST', `/api/flags/${id}/revive`),
  remove: (id: number) => request<{ ok: true }>('DELETE', `/api/flags/${id}`),
  preview: (id: number, distinctId: string) => request<FlagResult>('POST', `/api/flags/${id}/preview`, { distinctId }),
  events: (id: number) => request<FlagEvent[]>('GET', `/api/flags/${id}/events?limit=50`),
};
