import { seriesStyle } from '../theme.js';

export interface LegendItem { name: string; dashed?: boolean; note?: string }

/**
 * A chart's legend: each entry is a button named by its series whose `aria-pressed` says whether
 * the series is drawn; pressing it hides or shows the series. A note (a total, "right axis")
 * sits beside the button, outside its name.
 */
export function Legend(props: { items: LegendItem[]; hidden: Set<number>; onToggle: (index: number) => void; label?: string }) {
  return (
    <ul class="legend" aria-label={props.label ?? 'Series'}>
      {props.items.map((s, k) => {
        const { color, dash } = seriesStyle(k);
        const dashed = s.dashed || !!dash;
        return (
          <li>
            <button type="button" class="legend-item" aria-pressed={!props.hidden.has(k)} onClick={() => props.onToggle(k)}>
              <span class={`swatch${dashed ? ' dashed' : ''}`} style={dashed ? { borderColor: color } : { background: color }} aria-hidden="true" />
              {s.name}
            </button>
            {s.note && <span class="muted legend-note">{s.note}</span>}
          </li>
        );
      })}
    </ul>
  );
}

/** `hidden` with `k` toggled (a new set, for state). */
export const toggled = (hidden: Set<number>, k: number) => {
  const next = new Set(hidden);
  if (!next.delete(k)) next.add(k);
  return next;
};

/** A figure as the tooltip and the legend show it: the exact value, digits grouped. */
export const exact = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 6 });
