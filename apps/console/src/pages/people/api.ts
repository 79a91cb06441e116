import type { z } from 'zod';
import { queryString, request } from '../../api.js';
import type { CohortMembersSchema, CohortPreviewSchema, CohortSchema, PrivacyRequestSchema, UserDetailSchema, UsersResultSchema } from '@tally-analytics/server/schemas';

export type UsersResult = z.infer<typeof UsersResultSchema>;
export type UserDetail = z.infer<typeof UserDetailSchema>;
export type CohortMembers = z.infer<typeof CohortMembersSchema>;
export type CohortPreview = z.infer<typeof CohortPreviewSchema>;
export type Cohort = z.infer<typeof CohortSchema>;
export type CohortDefinition = Cohort['definition'];
export type CohortCriterion = CohortDefinition['criteria'][number];
export interface CohortWrite { name: string; description: string | null; definition: CohortDefinition }
export type PrivacyRequest = z.infer<typeof PrivacyRequestSchema>;
export type PrivacyType = PrivacyRequest['type'];

export const peopleApi = {
  users: (projectId: string, search: string, offset: number, limit = 50) => request<UsersResult>('GET', `/api/data/users${queryString({ projectId, search, offset, limit })}`),
  user: (projectId: string, distinctId: string) => request<UserDetail>('GET', `/api/data/users/${encodeURIComponent(distinctId)}${queryString({ projectId, limit: 200 })}`),
  cohort: (id: number) => request<Cohort>('GET', `/api/cohorts/${id}`),
  createCohort: (projectId: string, body: CohortWrite) => request<Cohort>('POST', '/api/cohorts', { projectId, ...body }),
  updateCohort: (id: number, body: CohortWrite) => request<Cohort>('PUT', `/api/cohorts/${id}`, body),
  deleteCohort: (id: number) => request<{ ok: true }>('DELETE', `/api/cohorts/${id}`),
  previewCohort: (projectId: string, definition: CohortDefinition) => request<CohortPreview>('POST', '/api/cohorts/preview', { projectId, definition }),
  members: (id: number) => request<CohortMembers>('GET', `/api/cohorts/${id}/members`),
  privacyRequests: (projectId: string) => request<PrivacyRequest[]>('GET', `/api/privacy/requests${queryString({ projectId })}`),
  createPrivacyRequest: (projectId: string, type: PrivacyType, distinctIds: string[]) =>
    request<PrivacyRequest>('POST', `/api/privacy/requests${queryString({ projectId })}`, { type, distinctIds }),
  privacyDownload: (id: number) => request<string>('GET', `/api/privacy/requests/${id}/download`, undefined, { raw: true }),
};
