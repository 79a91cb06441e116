import { useEffect, useState } from 'preact/hooks';
import type { DateRangeSpec } from '../types.js';

const PRESETS: Array<[string, string]> = [['today', 'Today'], ['yesterday', 'Yesterday'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days'], ['3m', 'Last 3 months'], ['6m', 'Last 6 months'], ['12m', 'Last 12 months']];

/** A date range: a preset, fixed days, or (where `allowNone`) none (each report keeps its own). */
export function RangePicker(props: { value: DateRangeSpec | null; onChange: (r: DateRangeSpec | null) => void; allowNone?: string; id: string; label?: string; disabled?: boolean }) {
  const v = props.value;
  const [from, setFrom] = useState(v?.kind === 'absolute' ? v.from : '');
  const [to, setTo] = useState(v?.kind === 'absolute' ? v.to : '');
  // A value set from outside (a saved report opened after the first render) fills the fields.
  const vFrom = v?.kind === 'absolute' ? v.from : undefined;
  const vTo = v?.kind === 'absolute' ? v.to : undefined;
  useEffect(() => {
    if (vFrom !== undefined && vTo !== undefined) { setFrom(vFrom); setTo(vTo); }
  }, [vFrom, vTo]);
  const selected = !v ? 'none' : v.kind === 'preset' ? v.preset : 'absolute';
  const onSelect = (s: string) => {
    if (s === 'none') props.onChange(null);
    else if (s === 'absolute') {
      const today = new Date().toISOString().slice(0, 10);
      const f = from || new Date(Date.now() - 29 * 86400_000).toISOString().slice(0, 10);
      const t = to || today;
      setFrom(f);
      setTo(t);
      props.onChange({ kind: 'absolute', from: f, to: t });
    } else props.onChange({ kind: 'preset', preset: s as any });
  };
  const apply = (f: string, t: string) => {
    setFrom(f);
    setTo(t);
    if (/^\d{4}-\d{2}-\d{2}$/.test(f) && /^\d{4}-\d{2}-\d{2}$/.test(t) && f <= t) props.onChange({ kind: 'absolute', from: f, to: t });
  };
  return (
    <div class="range">
      <label for={props.id}>{props.label ?? 'Date range'}</label>
      <select id={props.id} value={selected} disabled={props.disabled} onChange={(e) => onSelect((e.target as HTMLSelectElement).value)}>
        {props.allowNone && <option value="none">{props.allowNone}</option>}
        {PRESETS.map(([k, l]) => <option value={k}>{l}</option>)}
        <option value="absolute">Fixed dates…</option>
      </select>
      {selected === 'absolute' && (
        <>
          <label for={`${props.id}-from`} class="sr-only">From</label>
          <input id={`${props.id}-from`} type="date" value={from} disabled={props.disabled} onChange={(e) => apply((e.target as HTMLInputElement).value, to)} />
          <span aria-hidden="true">–</span>
          <label for={`${props.id}-to`} class="sr-only">To</label>
          <input id={`${props.id}-to`} type="date" value={to} disabled={props.disabled} onChange={(e) => apply(from, (e.target as HTMLInputElement).value)} />
        </>
      )}
    </div>
  );
}
