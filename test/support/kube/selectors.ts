import { badRequest, type KubeObject } from './types.js';

/** Label and field selectors as list and watch accept them. */
export type Selector = (obj: KubeObject) => boolean;

function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      terms.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim()) terms.push(current.trim());
  return terms;
}

export function labelSelector(selector: string | null): Selector {
  if (!selector) return () => true;
  const tests = splitTerms(selector).map((term): Selector => {
    const labels = (o: KubeObject) => o.metadata.labels ?? {};
    let m = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (m) {
      const [, key, op, value] = m;
      return op === '!=' ? (o) => labels(o)[key] !== value : (o) => labels(o)[key] === value;
    }
    m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m) {
      const [, key, op, list] = m;
      const values = new Set(list.split(',').map((s) => s.trim()));
      return op === 'in' ? (o) => values.has(labels(o)[key]) : (o) => !values.has(labels(o)[key]);
    }
    m = /^(!?)([A-Za-z0-9./_-]+)$/.exec(term);
    if (m) {
      const [, not, key] = m;
      return not ? (o) => !(key in labels(o)) : (o) => key in labels(o);
    }
    throw badRequest(`unable to parse requirement: invalid label selector "${term}"`);
  });
  return (o) => tests.every((t) => t(o));
}

export function fieldSelector(selector: string | null): Selector {
  if (!selector) return () => true;
  const tests = splitTerms(selector).map((term): Selector => {
    const m = /^([^!=]+)(==|=|!=)(.*)$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${term}'; can't understand '${term}'`);
    const [, path, op, value] = m;
    const read = (o: KubeObject) => {
      let node: any = o;
      for (const part of path.trim().split('.')) node = node?.[part];
      return node === undefined || node === null ? '' : String(node);
    };
    return op === '!=' ? (o) => read(o) !== value : (o) => read(o) === value;
  });
  return (o) => tests.every((t) => t(o));
}
