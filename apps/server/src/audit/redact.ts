/**
 * Snapshot fields whose values are credentials: never stored in an audit row, whatever the
 * domain. A changed secret shows as its action (`flag_secret.set`, `token.created`), not its value.
 */
const SECRET_FIELDS = new Set(['token', 'token_hash', 'secret', 'flag_secret', 'flag_secret_hash', 'password', 'key_hash']);
export const REDACTED = '[redacted]';

/** A deep copy of a JSON-like snapshot with every secret field's value replaced by `[redacted]`. */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    out[k] = SECRET_FIELDS.has(k) && v !== null ? REDACTED : redact(v);
  }
  return out;
}
