/** Reading typed settings from environment variables (config.ts and the port configs share these). */
export type Env = Record<string, string | undefined>;

/** A non-negative integer variable, or `fallback` when unset or empty; anything else stops the start. */
export function int(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer (got ${raw})`);
  return n;
}

/** One of `values`, or `fallback` when unset or empty; anything else stops the start. */
export function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${values.join(', ')} (got ${raw})`);
  return raw as T;
}
