import type { KubeObject, PrinterColumn, ResourceType } from './types.js';

/**
 * Server-side printing (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), which is how
 * kubectl gets columns: a custom kind's additionalPrinterColumns (JSONPath, the subset CRDs use:
 * `.a.b`, `[n]`, `[?(@.k=="v")]`), built-in kinds' usual columns, ages as kubectl shows them.
 */

function evaluate(obj: unknown, path: string): unknown[] {
  let nodes: unknown[] = [obj];
  const re = /\.([A-Za-z0-9_-]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_.-]+)\s*==\s*["']([^"']*)["']\)\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(path))) {
    const [, field, index, filterKey, filterValue] = m;
    const next: unknown[] = [];
    for (const node of nodes) {
      if (node === null || typeof node !== 'object') continue;
      if (field !== undefined) {
        const v = (node as any)[field];
        if (v !== undefined) next.push(v);
      } else if (index !== undefined) {
        if (Array.isArray(node) && node[Number(index)] !== undefined) next.push(node[Number(index)]);
      } else if (Array.isArray(node)) {
        for (const item of node) {
          let v: any = item;
          for (const part of filterKey.split('.')) v = v?.[part];
          if (String(v) === filterValue) next.push(item);
        }
      }
    }
    nodes = next;
  }
  return nodes;
}

/** k8s.io/apimachinery's duration.HumanDuration, as the Age column shows it. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 192) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

function columnsOf(t: ResourceType): PrinterColumn[] {
  const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
  if (t.custom) return t.columns.length > 0 ? t.columns : [age];
  if (t.kind === 'CustomResourceDefinition') return t.columns;
  return [...t.columns, age];
}

function cell(obj: KubeObject, c: PrinterColumn): unknown {
  if (c.compute) return c.compute(obj);
  const values = evaluate(obj, c.jsonPath);
  if (values.length === 0) return c.type === 'string' || c.type === 'date' ? '<none>' : null;
  const v = values[0];
  if (c.type === 'date' && typeof v === 'string') return humanDuration(Date.now() - Date.parse(v));
  if (c.type === 'string') return typeof v === 'string' ? v : JSON.stringify(v);
  return v;
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function toTable(t: ResourceType, objects: KubeObject[], resourceVersion: string, include: IncludeObject, withHeaders = true): Record<string, unknown> {
  const columns = columnsOf(t);
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: withHeaders
      ? [
          { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
          ...columns.map((c) => ({ name: c.name, type: c.type === 'date' ? 'date' : c.type, format: '', description: c.description ?? '', priority: c.priority ?? 0 })),
        ]
      : [],
    rows: objects.map((o) => ({
      cells: [o.metadata.name, ...columns.map((c) => cell(o, c))],
      ...(include === 'None'
        ? {}
        : {
            object:
              include === 'Object' ? o : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
          }),
    })),
  };
}

export function wantsTable(accept: string | undefined): boolean {
  return Boolean(accept && /as=Table/.test(accept.split(',')[0]));
}
