import { z } from 'zod';
import { BaseStatusShape, ObjectName, ProjectRefSchema, type KindDefinition, type Resource } from './meta.js';

/**
 * FlagSecret: the flag secret (for /flags/local-evaluation) of a Project. Without `secretRef` the
 * operator mints one into the Secret `<name>-flag-secret`, key `secret`.
 */
export const FlagSecretSpecSchema = z.object({
  projectRef: ProjectRefSchema,
  secretRef: z
    .object({
      name: ObjectName,
      key: z
        .string()
        .min(1)
        .max(253)
        .regex(/^[-._a-zA-Z0-9]+$/)
        .default('secret'),
    })
    .strict()
    .optional(),
})
  // Unknown members are refused, as the API server does for kubectl (fieldValidation=Strict).
  .strict();
export type FlagSecretSpec = z.output<typeof FlagSecretSpecSchema>;

export const FlagSecretStatusSchema = z.object({
  ...BaseStatusShape,
  projectId: z.number().int().positive().optional(),
  /** The Secret the flag secret was read from or minted into. */
  secretName: z.string().optional(),
});
export type FlagSecretStatus = z.infer<typeof FlagSecretStatusSchema>;

export type FlagSecret = Resource<'FlagSecret', FlagSecretSpec, FlagSecretStatus>;

export const FLAG_SECRET: KindDefinition<'FlagSecret'> = {
  kind: 'FlagSecret',
  plural: 'flagsecrets',
  singular: 'flagsecret',
  shortNames: ['fsec'],
  spec: FlagSecretSpecSchema,
  status: FlagSecretStatusSchema,
  columns: [
    { name: 'Project', type: 'string', jsonPath: '.spec.projectRef.name' },
    { name: 'Project ID', type: 'integer', jsonPath: '.status.projectId' },
    { name: 'Secret', type: 'string', jsonPath: '.status.secretName', priority: 1 },
  ],
};
