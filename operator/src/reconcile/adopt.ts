import { ADOPT_ANNOTATION, type AnyResource } from '../kinds.js';
import { ApiError } from '../tally-api.js';
import { notReady, type Outcome, type ReconcileContext } from './context.js';

/**
 * The adopt-by-annotation step of Organization and Project: `take` hands the existing object `id`
 * (from the adopt-id annotation) to the resource. An id the service does not know makes the
 * resource Invalid, naming the annotation; a taken object is reported with an Adopted event.
 */
export async function adoptByAnnotation<T>(ctx: ReconcileContext, obj: AnyResource, what: 'organization' | 'project', id: number,
  take: (id: number) => Promise<T>): Promise<{ adopted: T } | { outcome: Outcome }> {
  let adopted: T;
  try {
    adopted = await take(id);
  } catch (err) {
    if (err instanceof ApiError && err.kind === 'not_found') return { outcome: notReady('Invalid', `${ADOPT_ANNOTATION}: ${what} ${id} does not exist`) };
    throw err;
  }
  ctx.event(obj, 'Adopted', `${what} ${id} adopted`);
  return { adopted };
}
