import {
  FlagNotFoundError,
  GeneralError,
  StandardResolutionReasons,
  TargetingKeyMissingError,
  TypeMismatchError,
  type EvaluationContext,
  type JsonValue,
  type Provider,
  type ResolutionDetails,
} from '@openfeature/server-sdk';
import type { Tally } from './client.js';
import type { EvaluatedFlag } from './flags.js';

/**
 * OpenFeature server provider over a Tally client. The targeting key is the distinct_id.
 * - boolean: `enabled` (the caller's default when the flag is disabled or missing).
 * - string: the served variant key (the default when the flag is off or has no variants).
 * - number / object: the served variant's payload (the default when off or without payload).
 * Reasons: a served value -> TARGETING_MATCH, `no_match` (or nothing to serve) -> DEFAULT,
 * `disabled` -> DISABLED, `not_found` -> FLAG_NOT_FOUND error, server unreachable -> GENERAL
 * error (OpenFeature then returns the caller's default). `flagMetadata` carries the service's
 * `reason` (e.g. `rule:2`) and `source` (`local` or `remote`).
 */
export class TallyProvider implements Provider {
  readonly metadata = { name: 'tally-analytics' } as const;
  readonly runsOn = 'server' as const;

  constructor(private client: Tally) {}

  async initialize(): Promise<void> {
    await this.client.ready();
  }

  async onClose(): Promise<void> {
    await this.client.shutdown();
  }

  private async evaluate(flagKey: string, context: EvaluationContext): Promise<EvaluatedFlag> {
    const id = context.targetingKey;
    if (!id) throw new TargetingKeyMissingError('targetingKey (the distinct_id) is required');
    let r: EvaluatedFlag;
    try {
      r = await this.client.getFlag(flagKey, id);
    } catch (err) {
      throw new GeneralError(err instanceof Error ? err.message : String(err));
    }
    if (r.reason === 'not_found') throw new FlagNotFoundError(`flag "${flagKey}" not found`);
    return r;
  }

  private details<T>(r: EvaluatedFlag, value: T, served: boolean): ResolutionDetails<T> {
    const reason = r.reason === 'disabled'
      ? StandardResolutionReasons.DISABLED
      : r.enabled && served ? StandardResolutionReasons.TARGETING_MATCH : StandardResolutionReasons.DEFAULT;
    return {
      value,
      ...(r.variant !== null ? { variant: r.variant } : {}),
      reason,
      flagMetadata: { reason: r.reason, source: r.source },
    };
  }

  async resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    const r = await this.evaluate(flagKey, context);
    // A disabled flag serves the caller's default (OpenFeature: reason DISABLED); an active flag
    // that does not match this identity is a real evaluation to `false`.
    if (r.reason === 'disabled') return this.details(r, defaultValue, false);
    return this.details(r, r.enabled, true);
  }

  async resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext): Promise<ResolutionDetails<string>> {
    const r = await this.evaluate(flagKey, context);
    const served = r.enabled && r.variant !== null;
    return this.details(r, served ? r.variant! : defaultValue, served);
  }

  async resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext): Promise<ResolutionDetails<number>> {
    const r = await this.evaluate(flagKey, context);
    if (!r.enabled || r.payload === null || r.payload === undefined) return this.details(r, defaultValue, false);
    if (typeof r.payload !== 'number') throw new TypeMismatchError(`payload of "${flagKey}" is not a number`);
    return this.details(r, r.payload, true);
  }

  async resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    const r = await this.evaluate(flagKey, context);
    if (!r.enabled || r.payload === null || r.payload === undefined) return this.details(r, defaultValue, false);
    if (typeof r.payload !== 'object') throw new TypeMismatchError(`payload of "${flagKey}" is not an object`);
    return this.details(r, r.payload as T, true);
  }
}
