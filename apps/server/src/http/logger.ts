import type { Logger } from './errors.js';

/** One JSON line per message on stderr; `silent` for tests. */
export function createLogger(level: 'silent' | 'error' | 'info'): Logger {
  const write = (lvl: string, msg: string, meta?: Record<string, unknown>) =>
    process.stderr.write(JSON.stringify({ t: new Date().toISOString(), level: lvl, msg, ...meta }) + '\n');
  return {
    info: (msg, meta) => { if (level === 'info') write('info', msg, meta); },
    error: (msg, meta) => { if (level !== 'silent') write('error', msg, meta); },
  };
}
