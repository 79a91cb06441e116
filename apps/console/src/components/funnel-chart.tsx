import { useEffect, useState } from 'preact/hooks';
import { seriesStyle } from '../theme.js';
import { exact, Legend, toggled } from './legend.js';
import { duration, type FunnelGroup, type View } from './view.js';

/**
 * Funnel steps as SVG bars (height = share of the group's step 1), each labelled with its
 * conversion and count. A breakdown or a comparison draws one bar per group (segment, previous
 * period) in every step, with a legend whose buttons hide and show groups. A bar is a button:
 * Enter or a click drills down to the people who reached that step in that group; the "dropped"
 * links under the chart to those who did not go on. Hovering a bar shows its exact figures.
 */
export function FunnelChart(props: {
  view: View & { kind: 'funnel' };
  height: number;
  label: string;
  onStep?: (step: number, mode: 'reached' | 'dropped', group: FunnelGroup) => void;
}) {
  const { steps, groups } = props.view;
  const [hidden, setHidden] = useState<Set<number>>(new Set());
  const [tip, setTip] = useState<{ step: number; group: number } | null>(null);
  useEffect(() => setHidden((h) => (h.size ? new Set() : h)), [props.view]);
  const shown = groups.map((_, g) => g).filter((g) => !hidden.has(g));
  const n = steps.length;
  const H = props.height;
  const top = 34;
  const barH = H - top - 6;
  const grouped = groups.length > 1;
  // Percent positions instead of a stretched viewBox: bars fill the width, text keeps its shape.
  const col = 100 / Math.max(1, n);
  const slot = (col * 0.8) / Math.max(1, shown.length);
  const tipGroup = tip ? groups[tip.group] : null;
  const tipStep = tip && tipGroup ? tipGroup.steps[tip.step] : null;
  return (
    <div class="chart funnel">
      <div class="chart-plot">
        <svg width="100%" height={H} role="img" aria-label={props.label}>
          {steps.flatMap((s, i) => {
            const mid = `${i * col + col / 2}%`;
            // Flat children of the svg (one g.step per bar) so a bar is `svg > g.step:nth-of-type(n)`.
            return [
              grouped ? <text x={mid} y={20} text-anchor="middle" class="small">{`${i + 1}. ${s.name}`}</text> : null,
              ...shown.map((g, j) => {
                const group = groups[g];
                const st = group.steps[i];
                const first = Math.max(1, group.steps[0]?.count ?? 1);
                const h = (st.count / first) * barH;
                const x = `${i * col + col * 0.1 + j * slot}%`;
                const w = `${slot * (grouped ? 0.92 : 1)}%`;
                const who = group.name ? ` ${group.name}` : '';
                return (
                  <g
                    class="step"
                    data-group={g}
                    tabIndex={props.onStep ? 0 : -1}
                    role={props.onStep ? 'button' : undefined}
                    aria-label={`Step ${i + 1} ${s.name}${who}: ${st.count} users, ${(st.conversionFromStart * 100).toFixed(1)}% from start${props.onStep ? '. Show these people' : ''}`}
                    onClick={() => props.onStep?.(i, 'reached', group)}
                    onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), props.onStep?.(i, 'reached', group))}
                    onMouseEnter={() => setTip({ step: i, group: g })}
                    onMouseLeave={() => setTip(null)}
                    onFocus={() => setTip({ step: i, group: g })}
                    onBlur={() => setTip(null)}
                  >
                    <rect x={x} y={top} width={w} height={barH} class="track" />
                    <rect x={x} y={top + barH - h} width={w} height={Math.max(h, 1)} class="bar" style={grouped ? { fill: seriesStyle(g).color, fillOpacity: group.range === 'comparison' ? 0.55 : 1 } : undefined} />
                    {!grouped && <text x={mid} y={14} text-anchor="middle" class="big">{(st.conversionFromStart * 100).toFixed(1)}%</text>}
                    {!grouped && <text x={mid} y={28} text-anchor="middle" class="small">{st.count.toLocaleString()}</text>}
                  </g>
                );
              }),
            ];
          })}
        </svg>
        {tip && tipStep && tipGroup && (
          <div role="tooltip" class="chart-tip" style={{ left: `${tip.step * col + col / 2}%`, top: `${top}px`, transform: tip.step * col + col / 2 > 50 ? 'translate(calc(-100% - 8px), 0)' : 'translate(8px, 0)' }}>
            <div class="tip-head">{`${tip.step + 1}. ${steps[tip.step].name}`}</div>
            <div class="tip-row active">
              <span class="tip-name">{tipGroup.name || 'Users'}</span> <span class="tip-value">{exact(tipStep.count)}</span>
            </div>
            <div class="tip-row muted">{(tipStep.conversionFromStart * 100).toFixed(1)}% from start{tip.step > 0 ? `, ${exact(tipStep.droppedCount)} dropped` : ''}</div>
          </div>
        )}
      </div>
      {grouped && <Legend items={groups.map((g) => ({ name: g.name, dashed: g.range === 'comparison' }))} hidden={hidden} onToggle={(g) => setHidden((h) => toggled(h, g))} />}
      <ol class="funnel-legend">
        {steps.map((s, i) => (
          <li>
            <strong>{s.name}</strong>
            {i > 0 && !grouped && <span> · {(s.conversionFromPrevious * 100).toFixed(1)}% from previous · median {duration(s.medianSecondsToConvert)}</span>}
            {i > 0 && grouped && shown.map((g) => {
              const group = groups[g];
              const st = group.steps[i];
              return (
                <span class="funnel-group">
                  {' · '}{group.name}: {(st.conversionFromPrevious * 100).toFixed(1)}% from previous
                  {props.onStep && st.droppedCount > 0 && <>, <button type="button" class="link" aria-label={`${st.droppedCount} dropped before step ${i + 1}, ${group.name}`} onClick={() => props.onStep!(i, 'dropped', group)}>{st.droppedCount.toLocaleString()} dropped</button></>}
                </span>
              );
            })}
            {props.onStep && !grouped && i > 0 && steps[i - 1].count - s.count > 0 && (
              <> · <button type="button" class="link" onClick={() => props.onStep!(i, 'dropped', groups[0])}>{(steps[i - 1].count - s.count).toLocaleString()} dropped</button></>
            )}
          </li>
        ))}
      </ol>
    </div>
  );
}
