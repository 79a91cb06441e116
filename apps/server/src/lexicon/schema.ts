import { z } from 'zod';
import { text } from '../http/columns.js';

export const LexiconKind = z.enum(['event', 'property']);
export type LexiconKind = z.infer<typeof LexiconKind>;

const Tags = z.array(text().trim().min(1).max(50)).max(20);

/** PUT body: members left out keep their current value (or the default on a new entry). */
export const LexiconEntryBody = z
  .object({
    description: text().max(5000).nullable().optional(),
    displayName: text().trim().min(1).max(200).nullable().optional(),
    hidden: z.boolean().optional(),
    tags: Tags.optional(),
  })
  .strict();
export type LexiconEntryBody = z.infer<typeof LexiconEntryBody>;

const entryFields = {
  description: z.string().nullable(), displayName: z.string().nullable(), hidden: z.boolean(), tags: z.array(z.string()),
  /** False for an entry written ahead of any event carrying the name. */
  observed: z.boolean(),
  updated_at: z.number().int().nullable(),
};

export const LexiconEventSchema = z
  .object({ name: z.string(), count: z.number().int(), last_seen: z.number().int().nullable(), ...entryFields })
  .openapi('LexiconEvent');
export const LexiconPropertySchema = z
  .object({ key: z.string(), count: z.number().int(), sampleValues: z.array(z.string()), ...entryFields })
  .openapi('LexiconProperty');

export const LexiconListQuery = z.object({ projectId: z.string().optional() });
export const EventNameParams = z.object({ name: text().min(1).max(255) });
export const PropertyKeyParams = z.object({ key: text().min(1).max(500) });
