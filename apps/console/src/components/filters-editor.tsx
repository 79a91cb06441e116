import { useState } from 'preact/hooks';
import type { PropertyFilter } from '../types.js';
import { caseOnlyMatch, INTERNAL_PROPERTIES, unknownName } from './names.js';

const OPS: Array<[PropertyFilter['op'], string]> = [['eq', 'is'], ['neq', 'is not'], ['contains', 'contains'], ['set', 'is set'], ['not_set', 'is not set']];

/** Property filters: a list with remove buttons and a row to add one (key picked from `keys`). */
export function FiltersEditor(props: { id: string; value: PropertyFilter[]; onChange: (f: PropertyFilter[]) => void; keys: string[]; known?: string[]; values?: (key: string) => string[]; disabled?: boolean; legend?: string; checkNames?: boolean }) {
  const [key, setKey] = useState('');
  const [op, setOp] = useState<PropertyFilter['op']>('eq');
  const [value, setValue] = useState('');
  const needsValue = op === 'eq' || op === 'neq' || op === 'contains';
  const keys = props.keys.filter((k) => !INTERNAL_PROPERTIES.has(k));
  // `known`: every name data has, hidden ones included (`keys` are what the picker offers).
  const keyProblem = props.checkNames ? unknownName('property', key, props.known ? props.known.filter((k) => !INTERNAL_PROPERTIES.has(k)) : keys) : null;
  const caseMatch = needsValue ? caseOnlyMatch(value, props.values?.(key.trim()) ?? []) : null;
  const add = (e: Event) => {
    e.preventDefault();
    if (!key.trim() || (needsValue && value === '')) return;
    props.onChange([...props.value, needsValue ? { key: key.trim(), op, value } : { key: key.trim(), op }]);
    setKey('');
    setValue('');
  };
  return (
    <fieldset class="filters">
      <legend>{props.legend ?? 'Filters'}</legend>
      {props.value.length > 0 && (
        <ul class="chips">
          {props.value.map((f, i) => (
            <li>
              <span>{f.key} {OPS.find((o) => o[0] === f.op)?.[1]} {f.value ?? ''}</span>
              {!props.disabled && <button type="button" class="icon" aria-label={`Remove filter ${f.key}`} onClick={() => props.onChange(props.value.filter((_, j) => j !== i))}>×</button>}
            </li>
          ))}
        </ul>
      )}
      {!props.disabled && (
        <div class="row">
          <label for={`${props.id}-key`} class="sr-only">Filter property</label>
          <input id={`${props.id}-key`} list={`${props.id}-keys`} placeholder="property" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
          <datalist id={`${props.id}-keys`}>{keys.map((k) => <option value={k} />)}</datalist>
          <label for={`${props.id}-op`} class="sr-only">Filter operator</label>
          <select id={`${props.id}-op`} value={op} onChange={(e) => setOp((e.target as HTMLSelectElement).value as PropertyFilter['op'])}>
            {OPS.map(([k, l]) => <option value={k}>{l}</option>)}
          </select>
          {needsValue && (
            <>
              <label for={`${props.id}-value`} class="sr-only">Filter value</label>
              <input id={`${props.id}-value`} list={`${props.id}-values`} placeholder="value" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
              <datalist id={`${props.id}-values`}>{(props.values?.(key) ?? []).map((v) => <option value={v} />)}</datalist>
            </>
          )}
          <button type="button" onClick={add}>Add filter</button>
        </div>
      )}
      {!props.disabled && keyProblem && <p class="hint warn">{keyProblem}</p>}
      {!props.disabled && needsValue && (
        <p class="hint muted small">
          {caseMatch ? <>Values are case-sensitive: “{value}” matches nothing, “{caseMatch}” does.</> : 'Values are case-sensitive.'}
        </p>
      )}
    </fieldset>
  );
}
