import { z } from 'zod';
import { MAX_BREAKDOWN_PROPERTIES } from '../../breakdowns.js';
import { EventName, DateField, ProjectIdField, Filters, UnitSchema } from '../../body-parts.js';

/** The v0 segmentation body and answer: what a client sends and gets back. */
export const SegmentationQuerySchema = z
  .object({
    event: EventName, from: DateField, to: DateField, unit: UnitSchema, type: z.enum(['total', 'unique']),
    /** A property, or up to three whose values make one series each combination ("fr / chrome"). */
    breakdown: z.union([z.string().min(1).max(500), z.array(z.string().min(1).max(500)).min(1).max(MAX_BREAKDOWN_PROPERTIES)]).optional(),
    filters: Filters.optional(), projectId: ProjectIdField,
  })
  .strict() // unknown members are refused (README), not dropped
  .openapi('SegmentationQuery');
export type SegmentationQuery = z.infer<typeof SegmentationQuerySchema>;

export const SegmentationResultSchema = z
  .object({
    buckets: z.array(z.string()),
    series: z.array(z.object({
      name: z.string(), data: z.array(z.object({ bucket: z.string(), value: z.number() })),
      /**
       * The series over the whole range (segmentation answers): the events, or the unique
       * identities counted once each, which the buckets' sum is not. Added later: older answers lack it.
       */
      total: z.number().openapi({ description: 'the series over the whole range: events, or unique identities each counted once (not the buckets\' sum); segmentation answers' }).optional(),
    })),
    /** The project's annotations on days inside the range (segmentation answers; see docs/reports.md). */
    annotations: z.array(z.object({ id: z.number().int(), date: z.string(), description: z.string() })).optional(),
  })
  .openapi('SegmentationResult');
export type SegmentationResult = z.infer<typeof SegmentationResultSchema>;
