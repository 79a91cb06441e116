import type { View } from './view.js';

/**
 * Flows as a Sankey in plain SVG: one column per step, a node per event name in that column
 * (height = users through it), a band per transition between consecutive columns.
 */
export function SankeyChart(props: { view: View & { kind: 'flows' }; label: string; height: number }) {
  const { paths } = props.view;
  const steps = Math.max(1, ...paths.map((p) => p.path.length));
  const nodes = new Map<string, { col: number; name: string; value: number; y: number; h: number; outY: number; inY: number }>();
  const links = new Map<string, { from: string; to: string; value: number }>();
  for (const p of paths) {
    p.path.forEach((name, col) => {
      const id = `${col}:${name}`;
      const n = nodes.get(id) ?? { col, name, value: 0, y: 0, h: 0, outY: 0, inY: 0 };
      n.value += p.count;
      nodes.set(id, n);
      if (col > 0) {
        const from = `${col - 1}:${p.path[col - 1]}`;
        const key = `${from}>${id}`;
        const l = links.get(key) ?? { from, to: id, value: 0 };
        l.value += p.count;
        links.set(key, l);
      }
    });
  }
  const H = props.height;
  const colW = 180;
  const W = steps * colW;
  const gap = 6;
  const maxTotal = Math.max(1, ...Array.from({ length: steps }, (_, c) => [...nodes.values()].filter((n) => n.col === c).reduce((a, n) => a + n.value, 0)));
  const perColumnNodes = Math.max(1, ...Array.from({ length: steps }, (_, c) => [...nodes.values()].filter((n) => n.col === c).length));
  const scale = (H - 10 - gap * perColumnNodes) / maxTotal;
  for (let c = 0; c < steps; c++) {
    let y = 5;
    for (const n of [...nodes.values()].filter((n) => n.col === c).sort((a, b) => b.value - a.value)) {
      n.y = y;
      n.h = Math.max(2, n.value * scale);
      n.outY = n.inY = y;
      y += n.h + gap;
    }
  }
  const bands = [...links.values()].sort((a, b) => b.value - a.value).map((l) => {
    const a = nodes.get(l.from)!;
    const b = nodes.get(l.to)!;
    const h = Math.max(1, l.value * scale);
    const x0 = a.col * colW + 12;
    const x1 = b.col * colW;
    const y0 = a.outY + h / 2;
    const y1 = b.inY + h / 2;
    a.outY += h;
    b.inY += h;
    const mx = (x0 + x1) / 2;
    return <path d={`M${x0},${y0} C${mx},${y0} ${mx},${y1} ${x1},${y1}`} stroke-width={h} class="band"><title>{`${a.name} → ${b.name}: ${l.value}`}</title></path>;
  });
  return (
    <div class="chart scroll-x">
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={props.label} class="sankey">
        {bands}
        {[...nodes.values()].map((n) => (
          <g>
            <rect x={n.col * colW} y={n.y} width={12} height={n.h} class="node" />
            <text x={n.col * colW + 16} y={n.y + Math.min(n.h, 20) / 2 + 4} class="small">{`${n.name} (${n.value})`}</text>
          </g>
        ))}
      </svg>
    </div>
  );
}
