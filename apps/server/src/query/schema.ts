/**
 * The v0 query bodies and answers, by their public names: the shared parts (body-parts.ts), then
 * each kind's own (kinds/<kind>/schema.ts, in the order they were declared).
 */
export { PropertyFilterSchema, type PropertyFilter, Filters, UnitSchema } from './body-parts.js';
export * from './kinds/segmentation/schema.js';
export * from './kinds/funnel/schema.js';
export * from './kinds/retention/schema.js';
export * from './kinds/flows/schema.js';
export * from './kinds/sessions/schema.js';
export * from './kinds/calculated-metric/schema.js';
