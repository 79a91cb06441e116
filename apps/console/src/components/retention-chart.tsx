import type { View } from './view.js';

/** Retention as an SVG heat map: one row per cohort, one cell per bucket, shaded by the share returning. */
export function RetentionChart(props: { view: View & { kind: 'retention' }; label: string; height: number }) {
  const rows = props.view.rows;
  const cols = Math.max(1, ...rows.map((r) => r.counts.length));
  const cellH = Math.max(14, Math.min(28, (props.height - 20) / Math.max(1, rows.length)));
  const W = 90 + cols * 48;
  const H = 20 + rows.length * cellH;
  return (
    <div class="chart scroll-x">
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={props.label} class="heat">
        {Array.from({ length: cols }, (_, i) => <text x={90 + i * 48 + 24} y={13} text-anchor="middle" class="small">{i}</text>)}
        {rows.map((r, y) => (
          <g>
            <text x={0} y={20 + y * cellH + cellH * 0.7} class="small">{r.cohort.slice(0, 10)}</text>
            {r.counts.map((c, i) => {
              // Not reached yet: no cell, so it cannot read as 0 %.
              if (c === null) return null;
              const share = r.size ? c / r.size : 0;
              return (
                <g>
                  <rect x={90 + i * 48} y={20 + y * cellH} width={46} height={cellH - 2} class="cell" style={{ opacity: 0.12 + 0.88 * share }} />
                  <text x={90 + i * 48 + 23} y={20 + y * cellH + cellH * 0.68} text-anchor="middle" class={share > 0.5 ? 'small on' : 'small'}>{(share * 100).toFixed(0)}%</text>
                </g>
              );
            })}
          </g>
        ))}
      </svg>
    </div>
  );
}
