import type { Context } from 'koa';
import type { Deps } from '../deps.js';
import { authOf } from '../auth/context.js';

/**
 * docs/decisions.md, "Limits": `/api/query/*` is limited per credential and project (QUERY_RATE_PER_SECOND, bursts of
 * QUERY_RATE_BURST). Taken once the project is resolved, so a refused credential costs no token.
 */
export async function limitQueries(deps: Pick<Deps, 'rateLimits'>, ctx: Context, projectId: number): Promise<void> {
  const auth = authOf(ctx);
  const credential = auth.kind === 'superadmin' || auth.kind === 'operator' ? 'admin' : auth.kind === 'token' ? `t${auth.tokenId}` : `u${auth.userId}`;
  await deps.rateLimits.query(credential, projectId);
}
