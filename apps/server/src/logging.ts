/**
 * Public entry `@tally-analytics/server/logging`: the service's JSON-lines logger, which the
 * operator shares so that both processes log in one format.
 */
export { createLogger } from './http/logger.js';
export type { Logger } from './http/errors.js';
