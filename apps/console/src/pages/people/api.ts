import type { z } from 'zod';
import { request } from '../../api.js';
import type { CohortMembersSchema, CohortSchema, PrivacyRequestSchema, UserDetailSchema, UsersResultSchema } from '@tally-analytics/server/schemas';

export type UsersResult = z.infer<typeof UsersResultSchema>;
export type UserDetail = z.infer<typeof UserDetailSchema>;
export type Cohort = z.infer<typeof CohortSchema>;
export type CohortMembers = z.infer<typeof CohortMembersSchema>;
export type PrivacyRequest = z.infer<typeof PrivacyRequestSchema>;
export type PrivacyType = PrivacyRequest['type'];

const q = (params: Record<string, string | number | undefined>) => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') u.set(k, String(v));
  return u.toString();
};

export const peopleApi = {
  users: (projectId: string, search: string, offset: number, limit = 50) => request<UsersResult>('GET', `/api/data/users?${q({ projectId, search, offset, limit })}`),
  user: (projectId: string, distinctId: string) => request<UserDetail>('GET', `/api/data/users/${encodeURIComponent(distinctId)}?${q({ projectId, limit: 200 })}`),
  cohorts: (projectId: string) => request<Cohort[]>('GET', `/api/cohorts?${q({ projectId })}`),
  members: (id: number) => request<CohortMembers>('GET', `/api/cohorts/${id}/members`),
  privacyRequests: (projectId: string) => request<PrivacyRequest[]>('GET', `/api/privacy/requests?${q({ projectId })}`),
  createPrivacyRequest: (projectId: string, type: PrivacyType, distinctIds: string[]) =>
    request<PrivacyRequest>('POST', `/api/privacy/requests?${q({ projectId })}`, { type, distinctIds }),
  privacyDownload: (id: number) => request<string>('GET', `/api/privacy/requests/${id}/download`, undefined, { raw: true }),
};
