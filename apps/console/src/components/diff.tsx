/**
 * What changed between two snapshots of an object (an audit row's `before` and `after`): its
 * top-level fields whose values differ, compared as JSON. A creation (no `before`) or a deletion
 * (no `after`) lists every field of the side that exists. Read by the flags page's history and
 * the audit log.
 */
export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

type Snapshot = Record<string, unknown>;
const isObject = (v: unknown): v is Snapshot => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The fields (in `keys` only, when given) whose values differ, in first-seen order. */
export function fieldChanges(before: unknown, after: unknown, keys?: readonly string[]): FieldChange[] {
  if (before == null && after == null) return [];
  // A snapshot that is not an object (a bare value) is one field.
  if ((before != null && !isObject(before)) || (after != null && !isObject(after))) {
    return same(before, after) ? [] : [{ field: '(value)', before: before ?? undefined, after: after ?? undefined }];
  }
  const b: Snapshot = before ?? {};
  const a: Snapshot = after ?? {};
  const fields = keys ?? [...new Set([...Object.keys(b), ...Object.keys(a)])];
  return fields.filter((k) => !same(b[k], a[k])).map((k) => ({ field: k, before: b[k], after: a[k] }));
}

/** A value as the diff shows it: JSON, `—` when the field is absent; a time field (`…_at`, Unix ms) also as a UTC time. */
const shown = (field: string, v: unknown) => {
  if (v === undefined) return '—';
  const json = JSON.stringify(v, null, typeof v === 'object' && v !== null && JSON.stringify(v).length > 60 ? 2 : undefined);
  return field.endsWith('_at') && typeof v === 'number' && v > 0 ? `${json} (${new Date(v).toISOString().replace('T', ' ').slice(0, 19)} UTC)` : json;
};

/** The changed fields as a table: field, before, after. */
export function FieldChangesTable(props: { changes: FieldChange[]; caption: string }) {
  if (props.changes.length === 0) return <p class="muted">No field changed.</p>;
  return (
    <table class="field-changes">
      <caption class="sr-only">{props.caption}</caption>
      <thead><tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
      <tbody>
        {props.changes.map((c) => (
          <tr>
            <th scope="row"><code>{c.field}</code></th>
            <td class="before"><pre>{shown(c.field, c.before)}</pre></td>
            <td class="after"><pre>{shown(c.field, c.after)}</pre></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
