import { z } from 'zod';
import { LIMITS } from '../limits.js';

/**
 * Request and response shapes of the flags domain. Field-level checks live in zod (messages name
 * the field: `rules.0.rolloutPct: ...`); the checks that look at several fields at once (variant
 * percentages, variant names in rules, override lists) are `flagConsistencyError` below so that
 * POST and PUT (which checks the merged flag) share them.
 */

export const FLAG_KEY_PATTERN = new RegExp(`^[a-z0-9][a-z0-9_-]{0,${LIMITS.flagKeyLength - 1}}$`);
export const FLAG_TYPES = ['release', 'experiment', 'operational', 'kill_switch', 'permission'] as const;
export const FLAG_ACTIONS = ['created', 'updated', 'activated', 'deactivated', 'archived', 'revived'] as const;
export type FlagAction = (typeof FLAG_ACTIONS)[number];

/** `required` when absent, `fallback` for any other type problem. */
const typeError = (fallback: string) => (iss: { input?: unknown }) => (iss.input === undefined ? 'required' : fallback);

const PCT = 'must be an integer 0..100';
const pct = () => z.number({ error: typeError(PCT) }).int(PCT).min(0, PCT).max(100, PCT);

export const FlagKey = z
  .string({ error: typeError('must be a string') })
  .max(LIMITS.flagKeyLength, `must be at most ${LIMITS.flagKeyLength} characters`)
  .regex(FLAG_KEY_PATTERN, `must match ${FLAG_KEY_PATTERN.source}`);

export const FlagVariantSchema = z
  .object({
    key: z
      .string({ error: typeError('must be a string') })
      .min(LIMITS.variantKeyLength.min, `must be ${LIMITS.variantKeyLength.min}..${LIMITS.variantKeyLength.max} characters`)
      .max(LIMITS.variantKeyLength.max, `must be ${LIMITS.variantKeyLength.min}..${LIMITS.variantKeyLength.max} characters`),
    payload: z.unknown().optional(),
    rolloutPct: pct(),
  })
  .strict()
  .openapi('FlagVariant');

export const FlagRuleSchema = z
  .object({
    rolloutPct: pct(),
    cohortId: z.number({ error: 'must be an integer' }).int('must be an integer').positive('must be a positive integer').max(Number.MAX_SAFE_INTEGER, 'must be a positive integer').optional(),
    distinctIds: z
      .array(
        z
          .string({ error: 'must be a string' })
          .min(1, `must be 1..${LIMITS.overrideIdLength} characters`)
          .max(LIMITS.overrideIdLength, `must be 1..${LIMITS.overrideIdLength} characters`),
        { error: 'must be an array of strings' },
      )
      .max(LIMITS.overrideIdsPerRule, `at most ${LIMITS.overrideIdsPerRule} ids per rule`)
      .optional(),
    variant: z.string({ error: 'must be a string' }).optional(),
  })
  .strict()
  .openapi('FlagRule');

export type FlagVariant = z.infer<typeof FlagVariantSchema>;
export type FlagRule = z.infer<typeof FlagRuleSchema>;

const Variants = z
  .array(FlagVariantSchema, { error: 'must be an array' })
  .max(LIMITS.variantsPerFlag, `at most ${LIMITS.variantsPerFlag} variants`);
const Rules = z
  .array(FlagRuleSchema, { error: 'must be an array' })
  .max(LIMITS.rulesPerFlag, `at most ${LIMITS.rulesPerFlag} rules`);
const Name = z.string({ error: typeError('must be a string') }).trim().min(1, 'must not be empty').max(500, 'must be at most 500 characters');
const Description = z.string({ error: 'must be a string or null' }).max(10_000, 'must be at most 10000 characters').nullable();
const Type = z.enum(FLAG_TYPES, { error: `must be one of ${FLAG_TYPES.join(', ')}` });
const Active = z.boolean({ error: 'must be a boolean' });
const ProjectIdParam = z.union([z.number().int().positive(), z.string()], { error: 'projectId must be an integer' });

export const CreateFlagBody = z
  .object({
    projectId: ProjectIdParam.optional(),
    key: FlagKey,
    name: Name,
    description: Description.optional(),
    active: Active.optional(),
    type: Type.optional(),
    variants: Variants.optional(),
    rules: Rules.optional(),
  })
  .strict()
  .openapi('CreateFlagBody');

/**
 * PUT is partial. The read-only members of a FeatureFlag are tolerated (so a client may send back
 * what it read) and ignored; `key` may be repeated but not changed (checked in the handler).
 */
export const UpdateFlagBody = z
  .object({
    key: z.string().optional(),
    name: Name.optional(),
    description: Description.optional(),
    active: Active.optional(),
    type: Type.optional(),
    variants: Variants.optional(),
    rules: Rules.optional(),
    id: z.unknown().optional(),
    project_id: z.unknown().optional(),
    created_by: z.unknown().optional(),
    managed_by: z.unknown().optional(),
    archived_at: z.unknown().optional(),
    created_at: z.unknown().optional(),
    updated_at: z.unknown().optional(),
  })
  .strict()
  .openapi('UpdateFlagBody');

export type CreateFlagInput = z.infer<typeof CreateFlagBody>;
export type UpdateFlagInput = z.infer<typeof UpdateFlagBody>;

/** The cross-field rules of the API for a whole (created or merged) flag; undefined when valid. */
export function flagConsistencyError(flag: { variants: FlagVariant[]; rules: FlagRule[] }): string | undefined {
  const seen = new Set<string>();
  for (let i = 0; i < flag.variants.length; i++) {
    const key = flag.variants[i].key;
    if (seen.has(key)) return `variants.${i}.key: duplicate variant key "${key}"`;
    seen.add(key);
  }
  if (flag.variants.length > 0) {
    const sum = flag.variants.reduce((s, v) => s + v.rolloutPct, 0);
    if (sum !== 100) return `variants: rolloutPct must sum to exactly 100 (got ${sum})`;
  }
  for (let i = 0; i < flag.rules.length; i++) {
    const rule = flag.rules[i];
    if (rule.variant !== undefined && !seen.has(rule.variant)) {
      return `rules.${i}.variant: unknown variant "${rule.variant}"`;
    }
    if (rule.distinctIds && rule.distinctIds.length > 0 && rule.rolloutPct !== 100) {
      return `rules.${i}.rolloutPct: must be 100 when distinctIds is non-empty (got ${rule.rolloutPct})`;
    }
  }
  return undefined;
}

export const FeatureFlagSchema = z
  .object({
    id: z.number().int(),
    project_id: z.number().int(),
    created_by: z.number().int().nullable(),
    key: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    active: z.boolean(),
    type: z.enum(FLAG_TYPES),
    variants: z.array(FlagVariantSchema),
    rules: z.array(FlagRuleSchema),
    /** `<Kind>/<namespace>/<name>` of the Kubernetes resource that owns the flag; null when unmanaged. */
    managed_by: z.string().nullable(),
    archived_at: z.number().int().nullable(),
    created_at: z.number().int(),
    updated_at: z.number().int(),
  })
  .openapi('FeatureFlag');
export type FeatureFlag = z.infer<typeof FeatureFlagSchema>;

export const FlagEventSchema = z
  .object({
    id: z.number().int(),
    project_id: z.number().int(),
    flag_id: z.number().int(),
    actor_user_id: z.number().int().nullable(),
    actor_mcp_token_id: z.number().int().nullable(),
    /** The Kubernetes resource the change came through (superadmin key with X-Tally-Resource), else null. */
    actor_resource: z.string().nullable(),
    action: z.enum(FLAG_ACTIONS),
    before: FeatureFlagSchema.nullable(),
    after: FeatureFlagSchema.nullable(),
    created_at: z.number().int(),
  })
  .openapi('FlagEvent');
export type FlagEvent = z.infer<typeof FlagEventSchema>;

export const FlagResultSchema = z
  .object({ enabled: z.boolean(), variant: z.string().nullable(), payload: z.unknown(), reason: z.string() })
  .openapi('FlagResult');

export const FlagDefinitionSchema = z
  .object({
    key: z.string(),
    name: z.string(),
    active: z.boolean(),
    variants: z.array(FlagVariantSchema),
    rules: z.array(FlagRuleSchema),
    localEvaluable: z.boolean(),
  })
  .openapi('FlagDefinition');

export const FlagIdParams = z.object({ id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });
export const ListFlagsQuery = z.object({ projectId: z.string().optional(), archived: z.string().optional(), managedBy: z.string().optional() });
export const FlagEventsQuery = z.object({
  limit: z.coerce
    .number({ error: 'must be an integer' })
    .int('must be an integer')
    .min(1, `must be 1..${LIMITS.flagAuditLimit.max}`)
    .max(LIMITS.flagAuditLimit.max, `must be 1..${LIMITS.flagAuditLimit.max}`)
    .default(LIMITS.flagAuditLimit.default),
});
/** Documented only: the handler parses it itself to answer `distinctId required`. */
export const PreviewBody = z.object({ distinctId: z.string().min(1) }).openapi('FlagPreviewBody');
/** Documented only: the handler parses it itself (token in the body, `{status: 0}` messages). */
export const EvaluateBody = z
  .object({
    distinct_id: z.string().min(1), flag_keys: z.array(z.string()).optional(), token: z.string().optional(),
    /** Record `$experiment_started` for each flag served with a variant (docs/experiments.md). */
    exposure: z.boolean().optional(),
  })
  .openapi('FlagEvaluateBody');
export const EvaluateResponse = z.object({ flags: z.record(z.string(), FlagResultSchema) }).openapi('FlagEvaluateResponse');
/** GET /flags (Mixpanel's protocol): `context` is JSON with at least a distinct_id; other members (device_id, custom properties) are accepted and unused. */
export const MixpanelFlagsQuery = z.object({
  context: z.string().max(10_000).transform((s, c) => {
    let v: unknown;
    try { v = JSON.parse(s); } catch { v = undefined; }
    const d = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>).distinct_id : undefined;
    if (typeof d !== 'string' || d === '' || d.length > 255) {
      c.addIssue({ code: 'custom', message: 'must be a JSON object with a non-empty string distinct_id' });
      return z.NEVER;
    }
    return { distinct_id: d };
  }),
  token: z.string().max(200).optional(),
  mp_lib: z.string().optional(),
  $lib_version: z.string().optional(),
}).openapi('MixpanelFlagsQuery');
export const MixpanelFlagsResponse = z.object({
  flags: z.record(z.string(), z.object({ variant_key: z.string(), variant_value: z.unknown() })),
}).openapi('MixpanelFlagsResponse');
export const LocalEvaluationResponse = z.object({ flags: z.array(FlagDefinitionSchema) }).openapi('FlagLocalEvaluation');
export const FlagSecretResponse = z.object({ secret: z.string().uuid() }).openapi('FlagSecretResponse');
/** PUT /api/projects/{id}/flag-secret (superadmin key): sets the flag secret to a given uuid. */
export const SetFlagSecretBody = z.object({ secret: z.uuid({ error: 'must be a uuid' }) }).strict().openapi('SetFlagSecretBody');
