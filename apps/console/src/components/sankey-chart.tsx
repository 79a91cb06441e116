import { useEffect, useRef, useState } from 'preact/hooks';
import type { View } from './view.js';

/** The node after a path that stops early: the people who did nothing more. */
export const END_NODE = 'No further event';

/**
 * Flows as a Sankey in plain SVG: one column per step, a node per event name in that column
 * (height = users through it), a band per transition between consecutive columns.
 */
export function SankeyChart(props: { view: View & { kind: 'flows' }; label: string; height: number }) {
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    setWidth(el.clientWidth);
    return () => ro.disconnect();
  }, []);
  const longest = Math.max(1, ...props.view.paths.map((p) => p.path.length));
  // A path shorter than the longest stopped: its people did nothing more, shown as an end node.
  const paths = props.view.paths.map((p) => (p.path.length < longest ? { ...p, path: [...p.path, END_NODE] } : p));
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
  // The columns share the card's width: the last column's labels sit left of its nodes, so nothing is cut.
  const W = Math.max(160, width || 180 * steps);
  const colW = steps > 1 ? (W - 12) / (steps - 1) : W;
  const x = (col: number) => (steps > 1 ? col * colW : 0);
  const fit = (text: string, room: number) => {
    const chars = Math.max(4, Math.floor(room / 6.2));
    return text.length > chars ? `${text.slice(0, chars - 1)}…` : text;
  };
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
    const x0 = x(a.col) + 12;
    const x1 = x(b.col);
    const y0 = a.outY + h / 2;
    const y1 = b.inY + h / 2;
    a.outY += h;
    b.inY += h;
    const mx = (x0 + x1) / 2;
    return <path d={`M${x0},${y0} C${mx},${y0} ${mx},${y1} ${x1},${y1}`} stroke-width={h} class="band"><title>{`${a.name} → ${b.name}: ${l.value}`}</title></path>;
  });
  return (
    <div class="chart" ref={box}>
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={props.label} class="sankey">
        {bands}
        {[...nodes.values()].map((n) => {
          const last = steps > 1 && n.col === steps - 1;
          const label = `${n.name} (${n.value})`;
          return (
            <g class={n.name === END_NODE ? 'end' : undefined}>
              <rect x={x(n.col)} y={n.y} width={12} height={n.h} class="node" />
              <text x={last ? x(n.col) - 4 : x(n.col) + 16} y={n.y + Math.min(n.h, 20) / 2 + 4} text-anchor={last ? 'end' : 'start'} class="small">
                {fit(label, last || steps === 1 ? Math.min(colW, W) - 20 : colW - 24)}<title>{label}</title>
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
