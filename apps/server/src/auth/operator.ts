/**
 * What `OPERATOR_KEY` may call: exactly what the Kubernetes operator does (organisations, their
 * members, groups and machine tokens, projects, flag secrets, flags, experiments and their verdicts, usage counts), listed by the
 * route declaration's `METHOD path`. Every other route answers `403 forbidden` to it, so the key
 * itself reads no tenant's events, reports, exports or privacy downloads (it can mint a machine
 * token that does, inside the boundary between teams: docs/auth.md, "Threat model"). Its writes
 * name their resource (authenticate.ts) and are held to auth/boundary.ts.
 */
export const OPERATOR_ROUTES: ReadonlySet<string> = new Set([
  'POST /admin/orgs',
  'GET /admin/orgs',
  'GET /admin/orgs/{id}',
  'PATCH /admin/orgs/{id}',
  'DELETE /admin/orgs/{id}',
  'POST /admin/orgs/{id}/adopt',
  'POST /admin/orgs/{id}/release',
  'GET /admin/orgs/{id}/members',
  'POST /admin/orgs/{id}/members',
  'PUT /admin/orgs/{id}/members',
  'DELETE /admin/orgs/{id}/members-management',
  'GET /admin/orgs/{id}/groups',
  'PUT /admin/orgs/{id}/groups',
  'GET /admin/orgs/{id}/tokens',
  'POST /admin/orgs/{id}/tokens',
  'DELETE /admin/orgs/{id}/tokens/{tokenId}',
  'POST /admin/orgs/{id}/projects',
  'GET /admin/usage',
  'GET /api/projects',
  'GET /api/projects/{id}',
  'PATCH /api/projects/{id}',
  'DELETE /api/projects/{id}',
  'POST /api/projects/{id}/adopt',
  'POST /api/projects/{id}/release',
  'PUT /api/projects/{id}/flag-secret',
  'DELETE /api/projects/{id}/flag-secret',
  'GET /api/flags',
  'POST /api/flags',
  'GET /api/flags/{id}',
  'PUT /api/flags/{id}',
  'DELETE /api/flags/{id}',
  'POST /api/flags/{id}/archive',
  'POST /api/flags/{id}/revive',
  'POST /api/flags/{id}/release',
  'GET /api/experiments',
  'POST /api/experiments',
  'GET /api/experiments/{id}',
  'PUT /api/experiments/{id}',
  'DELETE /api/experiments/{id}',
  'POST /api/experiments/{id}/release',
  'GET /api/experiments/{id}/analysis',
  'GET /api/experiments/{id}/results',
]);

export const operatorMayCall = (method: string, path: string) => OPERATOR_ROUTES.has(`${method.toUpperCase()} ${path}`);
