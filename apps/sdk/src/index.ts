export { Tally, MAX_BATCH, MAX_EXPOSURES_REMEMBERED, type TallyOptions, type EngageOp } from './client.js';
export { FlagsClient, type FlagDefinition, type EvaluatedFlag, type FlagResult, type FlagsOptions } from './flags.js';
export { Transport, TallyHttpError, type RetryOptions } from './transport.js';
export { bucket, evaluateFlag, pickVariant } from '@tally-analytics/flag-evaluation';
