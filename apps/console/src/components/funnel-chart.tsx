import { duration, type View } from './view.js';

/**
 * Funnel steps as SVG bars (height = share of step 1), each labelled with its count, conversion
 * and median time to convert. A bar is a button: Enter or a click drills down to the people who
 * reached that step; the "dropped" links under it to those who did not go on.
 */
export function FunnelChart(props: {
  view: View & { kind: 'funnel' };
  height: number;
  label: string;
  onStep?: (step: number, mode: 'reached' | 'dropped') => void;
}) {
  const { steps } = props.view;
  const n = steps.length;
  const first = Math.max(1, steps[0]?.count ?? 1);
  const H = props.height;
  const top = 34;
  const barH = H - top - 6;
  // Percent positions instead of a stretched viewBox: bars fill the width, text keeps its shape.
  const col = 100 / Math.max(1, n);
  return (
    <div class="chart funnel">
      <svg width="100%" height={H} role="img" aria-label={props.label}>
        {steps.map((s, i) => {
          const h = (s.count / first) * barH;
          const x = `${i * col + col * 0.1}%`;
          const w = `${col * 0.8}%`;
          const mid = `${i * col + col / 2}%`;
          return (
            <g
              class="step"
              tabIndex={props.onStep ? 0 : -1}
              role={props.onStep ? 'button' : undefined}
              aria-label={`Step ${i + 1} ${s.name}: ${s.count} users, ${(s.conversionFromStart * 100).toFixed(1)}% from start${props.onStep ? '. Show these people' : ''}`}
              onClick={() => props.onStep?.(i, 'reached')}
              onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), props.onStep?.(i, 'reached'))}
            >
              <rect x={x} y={top} width={w} height={barH} class="track" />
              <rect x={x} y={top + barH - h} width={w} height={Math.max(h, 1)} class="bar" />
              <text x={mid} y={14} text-anchor="middle" class="big">{(s.conversionFromStart * 100).toFixed(1)}%</text>
              <text x={mid} y={28} text-anchor="middle" class="small">{s.count.toLocaleString()}</text>
            </g>
          );
        })}
      </svg>
      <ol class="funnel-legend">
        {steps.map((s, i) => (
          <li>
            <strong>{s.name}</strong>
            {i > 0 && <span> · {(s.conversionFromPrevious * 100).toFixed(1)}% from previous · median {duration(s.medianSecondsToConvert)}</span>}
            {props.onStep && i > 0 && steps[i - 1].count - s.count > 0 && (
              <> · <button type="button" class="link" onClick={() => props.onStep!(i, 'dropped')}>{(steps[i - 1].count - s.count).toLocaleString()} dropped</button></>
            )}
          </li>
        ))}
      </ol>
    </div>
  );
}
