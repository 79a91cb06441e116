/** Properties the ingestion adds for its own bookkeeping: never offered in a picker. */
export const INTERNAL_PROPERTIES = new Set(['$insert_id', '$payload_size', '$processed_at', '$received_at']);

function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length];
}

/** Up to three known names closest to `name` (case and spacing ignored first, then edit distance). */
export function closest(name: string, known: string[]): string[] {
  const norm = (s: string) => s.toLowerCase().replace(/[\s_-]+/g, '');
  const n = norm(name);
  return known
    .map((k) => ({ k, d: norm(k) === n ? 0 : norm(k).includes(n) || n.includes(norm(k)) ? 1 : distance(n, norm(k)) }))
    .filter((x) => x.d <= Math.max(2, Math.floor(n.length / 3)))
    .sort((a, b) => a.d - b.d || a.k.localeCompare(b.k))
    .slice(0, 3)
    .map((x) => x.k);
}

/** The builder's message for a name the project has never seen (null when it is known, or nothing is known yet). */
export function unknownName(kind: 'event' | 'property', name: string, known: string[]): string | null {
  const v = name.trim();
  if (!v || known.length === 0 || known.includes(v) || (kind === 'event' && v === '$all_events')) return null;
  const near = closest(v, known);
  return `Unknown ${kind} “${v}”: no data has it${near.length ? `. Did you mean ${near.map((x) => `“${x}”`).join(' or ')}?` : '.'}`;
}

/** For a filter value: the sample value it matches only when case is ignored (values are case-sensitive). */
export function caseOnlyMatch(value: string, samples: string[]): string | null {
  if (!value || samples.includes(value)) return null;
  return samples.find((s) => s.toLowerCase() === value.toLowerCase()) ?? null;
}
