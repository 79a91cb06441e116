import { z } from 'zod';

/**
 * The ingestion records as clients send them, for the OpenAPI document. The handlers read
 * raw bodies (JSON or Mixpanel's form encoding) and validate by hand in records.ts, because
 * properties are free-form and hostile input must never cost more than one pass.
 */
export const TrackedEventSchema = z
  .object({
    event: z.string(),
    properties: z
      .object({
        distinct_id: z.string(),
        time: z.number().int().optional().openapi({ description: 'Unix ms (seconds accepted, as Mixpanel SDKs send them); defaults to receive time' }),
        $insert_id: z.string().optional(),
        token: z.string().optional(),
        $device_id: z.string().optional(),
        $user_id: z.string().optional(),
      })
      .catchall(z.unknown()),
  })
  .openapi('TrackedEvent');

export const EngageOpSchema = z
  .object({
    distinct_id: z.string(),
    $set: z.record(z.string(), z.unknown()).optional(),
    $set_once: z.record(z.string(), z.unknown()).optional(),
    $add: z.record(z.string(), z.number()).optional(),
    $unset: z.array(z.string()).optional(),
    $delete: z.boolean().optional(),
    token: z.string().optional(),
  })
  .openapi('EngageOp');

export const AliasRequestSchema = z
  .object({ alias: z.string(), distinct_id: z.string(), token: z.string().optional() })
  .openapi('AliasRequest');

export const TrackBody = z.union([TrackedEventSchema, z.array(TrackedEventSchema).max(500)]);
export const EngageBody = z.union([EngageOpSchema, z.array(EngageOpSchema).max(500)]);
export const AliasBody = z.union([AliasRequestSchema, z.array(AliasRequestSchema).max(500)]);

export const TrackResponse = z.object({ status: z.literal(1), inserted: z.number().int() });
export const EngageResponse = z.object({
  status: z.union([z.literal(0), z.literal(1)]),
  applied: z.number().int(),
  error: z.string().optional(),
  refused: z.array(z.object({ index: z.number().int(), op: z.enum(['$delete', '$unset']) })).optional(),
});
export const AliasResponse = z.object({ status: z.literal(1) });

