import type { Context } from 'koa';

/** Sends `csv` as a download named after what it holds (reports and board cards answer `format=csv` so). */
export function sendCsv(ctx: Context, name: string, csv: string): string {
  ctx.type = 'text/csv; charset=utf-8';
  ctx.set('Content-Disposition', `attachment; filename="${name.replace(/[^\w.-]+/g, '_')}.csv"`);
  return csv;
}
