import type { Context } from 'koa';
import type { ProjectStore } from '../projects/store.js';
import { authOf } from '../auth/context.js';
import { loadProjectInScope } from '../auth/project-scope.js';
import { notFound } from '../http/errors.js';
import type { DefinitionRow, DefinitionStore } from './store.js';

/**
 * A loader of definitions by id for routes: a missing one, or one of a project outside the
 * caller's organisation, is `404 <what>`.
 */
export function scopedLoader<T>(projects: ProjectStore, store: DefinitionStore<T>, what: string) {
  return async (ctx: Context, id: number): Promise<DefinitionRow<T>> => {
    const row = await store.get(id);
    if (!row) throw notFound(what);
    await loadProjectInScope(projects, authOf(ctx), row.project_id).catch(() => { throw notFound(what); });
    return row;
  };
}
