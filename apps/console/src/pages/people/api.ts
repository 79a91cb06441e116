import type { z } from 'zod';
import { queryString, request } from '../../api.js';
import type { CohortMembersSchema, PrivacyRequestSchema, UserDetailSchema, UsersResultSchema } from '@tally-analytics/server/schemas';

export type UsersResult = z.infer<typeof UsersResultSchema>;
export type UserDetail = z.infer<typeof UserDetailSchema>;
export type CohortMembers = z.infer<typeof CohortMembersSchema>;
export type PrivacyRequest = z.infer<typeof PrivacyRequestSchema>;
export type PrivacyType = PrivacyRequest['type'];

export const peopleApi = {
  users: (projectId: string, search: string, offset: number, limit = 50) => request<UsersResult>('GET', `/api/data/users${queryString({ projectId, search, offset, limit })}`),
  user: (projectId: string, distinctId: string) => request<UserDetail>('GET', `/api/data/users/${encodeURIComponent(distinctId)}${queryString({ projectId, limit: 200 })}`),
  members: (id: number) => request<CohortMembers>('GET', `/api/cohorts/${id}/members`),
  privacyRequests: (projectId: string) => request<PrivacyRequest[]>('GET', `/api/privacy/requests${queryString({ projectId })}`),
  createPrivacyRequest: (projectId: string, type: PrivacyType, distinctIds: string[]) =>
    request<PrivacyRequest>('POST', `/api/privacy/requests${queryString({ projectId })}`, { type, distinctIds }),
  privacyDownload: (id: number) => request<string>('GET', `/api/privacy/requests/${id}/download`, undefined, { raw: true }),
};
