import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Cohort } from '../types.js';
import { matchesWords } from './searchable-list.js';
import './cohort-pickers.css';

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

/**
 * Breakdown by cohorts: the chosen cohorts (a segment each) as chips with remove buttons, a search
 * box to add another (a project may have dozens: a list of them all would push the Run button and
 * the rest of the query off the screen), and "Not in any cohort".
 */
export function CohortBreakdown(props: { id: string; cohorts: Cohort[]; value: number[]; notInAny: boolean; onChange: (ids: number[], notInAny: boolean) => void; full: boolean }) {
  if (props.cohorts.length === 0) return null;
  return (
    <fieldset class="cohort-breakdown">
      <legend>Breakdown by cohort</legend>
      <CohortPicker id={props.id} label="Add a cohort to the breakdown" chosenLabel="Cohorts in the breakdown" cohorts={props.cohorts} value={props.value} full={props.full}
        onChange={(ids) => props.onChange(ids, props.notInAny)} />
      <label class="row">
        <input type="checkbox" checked={props.notInAny} disabled={props.value.length === 0} onChange={(e) => props.onChange(props.value, (e.target as HTMLInputElement).checked)} />
        Not in any cohort
      </label>
      {props.value.length > 0 && <p class="muted small">One series per cohort; a person in two cohorts counts in both. Not combined with a property breakdown.</p>}
    </fieldset>
  );
}

/**
 * Cohorts picked from a search box (the WAI-ARIA combobox with a list box): typed words narrow the
 * cohorts not yet chosen; ArrowDown and ArrowUp move through them, Enter or a click picks one,
 * Escape closes the list (then clears the words); Backspace in the empty box removes the last chip.
 * The chosen ones are chips whose × removes them (the focus goes back to the box).
 */
export function CohortPicker(props: { id: string; label: string; chosenLabel: string; cohorts: Cohort[]; value: number[]; onChange: (ids: number[]) => void; full: boolean }) {
  const [q, setQ] = useState('');
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const list = useRef<HTMLUListElement>(null);
  const listId = `${props.id}-options`;
  const optionId = (c: Cohort) => `${props.id}-option-${c.id}`;
  const matches = props.cohorts.filter((c) => !props.value.includes(c.id) && matchesWords(c.name, q));
  const at = Math.max(0, Math.min(active, matches.length - 1));
  const shown = open && matches.length > 0;
  useLayoutEffect(() => {
    if (shown) list.current?.querySelector(`[id="${optionId(matches[at])}"]`)?.scrollIntoView({ block: 'nearest' });
  }, [shown, at, q]);

  const pick = (c: Cohort) => {
    if (props.full) return;
    props.onChange([...props.value, c.id]);
    setQ('');
    setActive(0);
    input.current?.focus();
  };
  const remove = (id: number) => {
    props.onChange(props.value.filter((x) => x !== id));
    input.current?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (!open) { setOpen(true); setActive(e.key === 'ArrowDown' ? 0 : matches.length - 1); return; }
      if (matches.length) setActive((at + (e.key === 'ArrowDown' ? 1 : -1) + matches.length) % matches.length);
    } else if (e.key === 'Enter') {
      if (!shown) return;
      e.preventDefault();
      pick(matches[at]);
    } else if (e.key === 'Escape') {
      if (!open && !q) return;
      e.preventDefault();
      if (open) setOpen(false);
      else setQ('');
    } else if (e.key === 'Backspace' && !q && props.value.length) {
      remove(props.value[props.value.length - 1]);
    }
  };

  return (
    <div class="cohort-picker">
      {props.value.length > 0 && (
        <ul class="chips" aria-label={props.chosenLabel}>
          {props.value.map((id) => (
            <li>
              <span>{nameOf(props.cohorts, id)}</span>
              <button type="button" class="icon" aria-label={`Remove ${nameOf(props.cohorts, id)}`} onClick={() => remove(id)}>×</button>
            </li>
          ))}
        </ul>
      )}
      <label for={`${props.id}-search`} class="sr-only">{props.label}</label>
      <div class="combo">
        <input id={`${props.id}-search`} ref={input} type="text" role="combobox" autoComplete="off" placeholder="Search cohorts…" value={q}
          aria-autocomplete="list" aria-expanded={shown} aria-controls={listId} aria-activedescendant={shown ? optionId(matches[at]) : undefined}
          aria-describedby={props.full ? `${props.id}-full` : undefined}
          onInput={(e) => { setQ((e.target as HTMLInputElement).value); setActive(0); setOpen(true); }}
          onClick={() => setOpen(!open)} onBlur={() => setOpen(false)} onKeyDown={onKey} />
        <ul role="listbox" id={listId} ref={list} aria-label="Cohorts" hidden={!shown}>
          {shown && matches.map((c, i) => (
            <li role="option" id={optionId(c)} aria-selected={i === at} aria-disabled={props.full || undefined} class={i === at ? 'active' : undefined}
              // Keeps the focus in the box, so the click does not close the list before it picks.
              onMouseDown={(e) => e.preventDefault()} onClick={() => pick(c)}>{c.name}</li>
          ))}
        </ul>
      </div>
      {open && q && matches.length === 0 && <p class="muted small">No other cohort matches “{q}”.</p>}
      {props.full && <p id={`${props.id}-full`} class="hint">At most {MAX_QUERY_COHORTS} cohorts in one query, filters included.</p>}
    </div>
  );
}
