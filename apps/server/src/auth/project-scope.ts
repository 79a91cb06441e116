import { badRequest, forbidden, notFound } from '../http/errors.js';
import type { Project, ProjectStore } from '../projects/store.js';
import { orgScope, type AuthContext } from './context.js';

/**
 * The `projectId` rules (docs/decisions.md, "Which project a request acts in"). Superadmin: the given project (404 if absent) or, when omitted,
 * the legacy default project: the installation's oldest. User: the id must belong to the
 * caller's organisation (else 403 forbidden); when omitted, the organisation's oldest project.
 * No project to default to: 400.
 */
export async function resolveProject(projects: ProjectStore, auth: AuthContext, raw: unknown): Promise<Project> {
  const orgId = orgScope(auth);
  if (raw === undefined || raw === null || raw === '') {
    const fallback = await projects.oldest(orgId);
    if (!fallback) throw badRequest('no project', { message: 'no default project exists; pass projectId', resolution: 'create a project first' });
    return fallback;
  }
  const id = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id) || id <= 0) throw badRequest('invalid projectId', { message: 'projectId must be a positive integer' });
  const project = await projects.get(id);
  if (orgId === null) {
    if (!project) throw notFound('project');
    return project;
  }
  if (!project || project.org_id !== orgId) throw forbidden();
  return project;
}

/**
 * A project addressed by id in a path (`/api/projects/{id}`): one outside the caller's
 * organisation is `404`, never `403`, so ids of other tenants leak nothing.
 */
export async function loadProjectInScope(projects: ProjectStore, auth: AuthContext, id: number): Promise<Project> {
  const orgId = orgScope(auth);
  const project = await projects.get(id);
  if (!project || (orgId !== null && project.org_id !== orgId)) throw notFound('project');
  return project;
}

/**
 * A loader for rows addressed by id in a path and owned by a project (reports, boards,
 * annotations…): a missing row, or one of another organisation's project, is `404 <what> not
 * found`, so ids of other tenants leak nothing.
 */
export function rowInScope<T extends { project_id: number }>(projects: ProjectStore, what: string, get: (id: number) => Promise<T | undefined>) {
  return async (auth: AuthContext, id: number): Promise<T> => {
    const row = await get(id);
    const orgId = orgScope(auth);
    const project = row ? await projects.get(row.project_id) : undefined;
    if (!row || !project || (orgId !== null && project.org_id !== orgId)) throw notFound(what);
    return row;
  };
}
