/**
 * CSV exports of run results (RFC 4180: CRLF lines, quoted where needed). Cells that a spreadsheet
 * would read as a formula (`=`, `+`, `-`, `@` at the start of a text cell) get a leading `'`, as
 * OWASP advises for exports of user-supplied text such as event names and property values.
 */
type Cell = string | number | boolean | null | undefined;

function cell(v: Cell): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const toCsv = (rows: Cell[][]) => rows.map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';

const asText = (v: unknown): Cell => (v !== null && typeof v === 'object' ? JSON.stringify(v) : (v as Cell));

/**
 * One table per result shape: a series × bucket grid for trends (segmentation, metric, IR trend
 * series), one row per step for funnels, per cohort for retention, per path for flows; any other
 * array of objects becomes a row per object with the union of their keys as columns.
 */
export function resultToCsv(result: unknown): string {
  const r = result as any;
  if (r && Array.isArray(r.buckets) && Array.isArray(r.series)) {
    // v0 series carry `{bucket, value}` points; IR trend series plain numbers, a segment and a range
    // (comparison series line up with the primary buckets by position).
    const label = (s: any) => `${s.name}${s.segment !== undefined ? ` (${s.segment ?? '(none)'})` : ''}${s.range === 'comparison' ? ' [comparison]' : ''}`;
    const value = (p: any) => (typeof p === 'number' ? p : p?.value ?? null);
    return toCsv([['series', ...r.buckets], ...r.series.map((s: any) => [label(s), ...r.buckets.map((_: string, i: number) => value(s.data?.[i]))])]);
  }
  if (r && Array.isArray(r.paths)) {
    return toCsv([['path', 'count'], ...r.paths.map((p: any) => [p.path.join(' > '), p.count]), ['(total users)', r.total]]);
  }
  if (Array.isArray(r) && r.length && 'cohort' in r[0] && Array.isArray(r[0].counts)) {
    const width = Math.max(...r.map((row: any) => row.counts.length));
    return toCsv([
      ['cohort', 'size', ...Array.from({ length: width }, (_, i) => `bucket_${i}`)],
      ...r.map((row: any) => [row.cohort, row.size, ...Array.from({ length: width }, (_, i) => row.counts[i] ?? null)]),
    ]);
  }
  if (Array.isArray(r) && r.length && 'conversionFromStart' in r[0]) {
    const cols = ['event', 'count', 'conversionFromPrevious', 'conversionFromStart', 'droppedCount', 'dropoffRate', 'meanSecondsToConvert', 'medianSecondsToConvert'];
    return toCsv([['step', ...cols], ...r.map((s: any, i: number) => [i, ...cols.map((c) => s[c])])]);
  }
  const rows: any[] = Array.isArray(r) ? r : r && typeof r === 'object' ? [r] : [{ value: r }];
  const keys = [...new Set(rows.flatMap((o) => (o && typeof o === 'object' ? Object.keys(o) : ['value'])))];
  return toCsv([keys, ...rows.map((o) => keys.map((k) => asText(o && typeof o === 'object' ? o[k] : o)))]);
}
