/**
 * The members of `desired` whose value differs from `current`'s (compared as canonical JSON), to
 * send only those: a kind that writes one object of the service from its spec (a flag, an
 * experiment) diffs the API's copy with the body it would send, the API's defaults filled in.
 */
export function changedMembers<B extends object>(current: Partial<Record<keyof B, unknown>>, desired: B): Partial<B> {
  const out: Partial<B> = {};
  for (const k of Object.keys(desired) as (keyof B)[]) {
    if (canonical(current[k]) !== canonical(desired[k])) out[k] = desired[k];
  }
  return out;
}

/** JSON with sorted keys and no undefined members, for comparing what the API stored with the spec. */
export function canonical(v: unknown): string {
  return JSON.stringify(v ?? null, (_k, val) => {
    if (val && typeof val === 'object' && !Array.isArray(val)) {
      return Object.fromEntries(Object.entries(val).filter(([, x]) => x !== undefined).sort(([a], [b]) => a.localeCompare(b)));
    }
    return val;
  });
}
