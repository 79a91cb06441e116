import type { BaseStatus, Condition } from './kinds.js';

/** The reasons of the Ready condition (docs/decisions.md, "Kubernetes contract"), plus the operator's own few. */
export type ReadyReason =
  | 'Reconciled' | 'Invalid' | 'ProjectNotFound' | 'OrganizationNotFound' | 'NamespaceNotAllowed' | 'AdoptionRefused' | 'NotManaged' | 'Conflict' | 'ApiUnavailable'
  | 'SecretNotFound' | 'FlagNotFound' | 'Deleting' | 'KubernetesError';

/**
 * The status an object should have: its own fields plus conditions. `lastTransitionTime` moves
 * only when a condition's status flips (metav1.Condition semantics).
 */
export function withCondition(existing: Condition[] | undefined, next: Omit<Condition, 'lastTransitionTime'>, now = new Date()): Condition[] {
  const list = existing ? [...existing] : [];
  const i = list.findIndex((c) => c.type === next.type);
  const before = i >= 0 ? list[i] : undefined;
  const lastTransitionTime = before && before.status === next.status ? before.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const cond: Condition = { ...next, lastTransitionTime };
  if (i >= 0) list[i] = cond;
  else list.push(cond);
  return list;
}

/** True when writing `desired` would change what `current` already says (timestamps aside). */
export function statusDiffers(current: BaseStatus & Record<string, unknown> | undefined, desired: BaseStatus & Record<string, unknown>): boolean {
  const cur = (current ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(desired)) {
    if (k === 'conditions') continue;
    if (JSON.stringify(cur[k] ?? null) !== JSON.stringify(v ?? null)) return true;
  }
  const a = (cur.conditions as Condition[] | undefined) ?? [];
  const b = desired.conditions ?? [];
  if (a.length !== b.length) return true;
  for (const c of b) {
    const o = a.find((x) => x.type === c.type);
    if (!o || o.status !== c.status || o.reason !== c.reason || o.message !== c.message || o.observedGeneration !== c.observedGeneration) return true;
  }
  return false;
}
