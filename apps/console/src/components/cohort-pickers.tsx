import { useState } from 'preact/hooks';
import type { Cohort } from '../types.js';

export interface CohortFilterDraft { cohort: number; op: 'in' | 'not_in' }
/** At most this many cohorts in one query, its filters and breakdown together (the API's limit). */
export const MAX_QUERY_COHORTS = 10;

const nameOf = (cohorts: Cohort[], id: number) => cohorts.find((c) => c.id === id)?.name ?? `cohort ${id}`;

/** "In cohort" / "Not in cohort" filters: chips with remove buttons and a row to add one. */
export function CohortFilters(props: { id: string; cohorts: Cohort[]; value: CohortFilterDraft[]; onChange: (f: CohortFilterDraft[]) => void; full: boolean }) {
  const [op, setOp] = useState<'in' | 'not_in'>('in');
  const [pick, setPick] = useState('');
  const chosen = pick || String(props.cohorts[0]?.id ?? '');
  const add = () => {
    if (!chosen || props.full) return;
    props.onChange([...props.value, { cohort: Number(chosen), op }]);
  };
  return (
    <fieldset class="filters">
      <legend>Cohort filters</legend>
      {props.value.length > 0 && (
        <ul class="chips">
          {props.value.map((f, i) => {
            const label = `${f.op === 'in' ? 'In cohort' : 'Not in cohort'} ${nameOf(props.cohorts, f.cohort)}`;
            return (
              <li>
                <span>{label}</span>
                <button type="button" class="icon" aria-label={`Remove filter ${label}`} onClick={() => props.onChange(props.value.filter((_, j) => j !== i))}>×</button>
              </li>
            );
          })}
        </ul>
      )}
      {props.cohorts.length === 0 ? <p class="muted small">No cohorts yet: build one under People → Cohorts.</p> : (
        <div class="row">
          <label for={`${props.id}-op`} class="sr-only">Cohort filter operator</label>
          <select id={`${props.id}-op`} value={op} onChange={(e) => setOp((e.target as HTMLSelectElement).value as 'in' | 'not_in')}>
            <option value="in">in cohort</option>
            <option value="not_in">not in cohort</option>
          </select>
          <label for={`${props.id}-cohort`} class="sr-only">Cohort</label>
          <select id={`${props.id}-cohort`} value={chosen} onChange={(e) => setPick((e.target as HTMLSelectElement).value)}>
            {props.cohorts.map((c) => <option value={String(c.id)}>{c.name}</option>)}
          </select>
          <button type="button" onClick={add} disabled={props.full}>Add cohort filter</button>
        </div>
      )}
    </fieldset>
  );
}

/** Breakdown by cohorts: one checkbox per cohort (a segment each), and "Not in any cohort". */
export function CohortBreakdown(props: { cohorts: Cohort[]; value: number[]; notInAny: boolean; onChange: (ids: number[], notInAny: boolean) => void; full: boolean }) {
  if (props.cohorts.length === 0) return null;
  return (
    <fieldset>
      <legend>Breakdown by cohort</legend>
      {props.cohorts.map((c) => {
        const on = props.value.includes(c.id);
        return (
          <label class="row">
            <input type="checkbox" checked={on} disabled={!on && props.full}
              onChange={(e) => props.onChange((e.target as HTMLInputElement).checked ? [...props.value, c.id] : props.value.filter((x) => x !== c.id), props.notInAny)} />
            {c.name}
          </label>
        );
      })}
      <label class="row">
        <input type="checkbox" checked={props.notInAny} disabled={props.value.length === 0} onChange={(e) => props.onChange(props.value, (e.target as HTMLInputElement).checked)} />
        Not in any cohort
      </label>
      {props.value.length > 0 && <p class="muted small">One series per cohort; a person in two cohorts counts in both. Not combined with a property breakdown.</p>}
    </fieldset>
  );
}
