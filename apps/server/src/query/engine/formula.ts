/**
 * Calculated-metric formulas: numbers, letters A..J, + - * /, unary minus and parentheses.
 * Parsed once into a tree; evaluation is per bucket on already aggregated numbers.
 * Division by zero gives 0 (documented in docs/analyses.md).
 */
export type Formula =
  | { k: 'num'; v: number }
  | { k: 'ref'; id: string }
  | { k: 'neg'; e: Formula }
  | { k: 'bin'; op: '+' | '-' | '*' | '/'; a: Formula; b: Formula };

export function parseFormula(src: string): Formula {
  const tokens = src.match(/\s*(\d+(?:\.\d+)?|[A-J]|[-+*/()]|\S)/g)?.map((t) => t.trim()) ?? [];
  let pos = 0;
  const peek = () => tokens[pos];
  const fail = (msg: string): never => { throw new Error(`formula: ${msg}`); };
  function expr(): Formula {
    let a = term();
    while (peek() === '+' || peek() === '-') { const op = tokens[pos++] as '+' | '-'; a = { k: 'bin', op, a, b: term() }; }
    return a;
  }
  function term(): Formula {
    let a = unary();
    while (peek() === '*' || peek() === '/') { const op = tokens[pos++] as '*' | '/'; a = { k: 'bin', op, a, b: unary() }; }
    return a;
  }
  function unary(): Formula {
    if (peek() === '-') { pos++; return { k: 'neg', e: unary() }; }
    return atom();
  }
  function atom(): Formula {
    const t = tokens[pos++];
    if (t === undefined) return fail('unexpected end');
    if (t === '(') { const e = expr(); if (tokens[pos++] !== ')') fail('missing )'); return e; }
    if (/^\d/.test(t)) return { k: 'num', v: Number(t) };
    if (/^[A-J]$/.test(t)) return { k: 'ref', id: t };
    return fail(`unexpected ${t}`);
  }
  if (tokens.length === 0) fail('empty');
  const tree = expr();
  if (pos !== tokens.length) fail(`unexpected ${tokens[pos]}`);
  return tree;
}

export function formulaRefs(f: Formula, out = new Set<string>()): Set<string> {
  if (f.k === 'ref') out.add(f.id);
  else if (f.k === 'neg') formulaRefs(f.e, out);
  else if (f.k === 'bin') { formulaRefs(f.a, out); formulaRefs(f.b, out); }
  return out;
}

export function evalFormula(f: Formula, values: Record<string, number>): number {
  switch (f.k) {
    case 'num': return f.v;
    case 'ref': return values[f.id] ?? 0;
    case 'neg': return -evalFormula(f.e, values);
    case 'bin': {
      const a = evalFormula(f.a, values);
      const b = evalFormula(f.b, values);
      if (f.op === '+') return a + b;
      if (f.op === '-') return a - b;
      if (f.op === '*') return a * b;
      return b === 0 ? 0 : a / b;
    }
  }
}
