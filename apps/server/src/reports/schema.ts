import { z } from 'zod';
import { text } from '../http/columns.js';
import { REPORT_TYPES } from '../query/registry.js';

/** The analyses declared as report types (query/registry.ts). */
export { REPORT_TYPES };
export const ReportTypeSchema = z.enum(REPORT_TYPES).openapi('ReportType');
export type ReportType = z.infer<typeof ReportTypeSchema>;

/** A v0 body (of the endpoint `type` names) or an IR document (any object carrying `v`). */
export const ReportQuerySchema = z.record(z.string(), z.unknown()).openapi({ type: 'object', description: 'v0 body (minus projectId) or Query IR document' });

export const SavedReportSchema = z
  .object({
    id: z.number().int(), project_id: z.number().int(), created_by: z.number().int().nullable(), name: z.string(),
    description: z.string().nullable(), type: ReportTypeSchema, query: ReportQuerySchema,
    created_at: z.number().int(), updated_at: z.number().int(),
    /** GET only: the query upgraded to the current IR, when it can be. */
    queryV1: ReportQuerySchema.optional(),
    /** GET only: repairs the upgrade made (or why it could not upgrade). */
    queryWarnings: z.array(z.string()).optional(),
  })
  .openapi('SavedReport');

const Name = text().trim().min(1).max(200);
const Description = text().max(5000).nullable();
export const CreateReportBody = z
  .object({
    projectId: z.union([z.string(), z.number()]).optional(),
    name: Name, description: Description.optional(), type: ReportTypeSchema, query: ReportQuerySchema,
  })
  .strict();
export const UpdateReportBody = z
  .object({ name: Name.optional(), description: Description.optional(), type: ReportTypeSchema.optional(), query: ReportQuerySchema.optional() })
  .strict();
export const ProjectQuery = z.object({ projectId: z.string().optional() });
export const RunFormatQuery = z.object({ format: z.enum(['json', 'csv']).default('json') });

export const ReportRunSchema = z
  .object({
    report_id: z.number().int(), type: ReportTypeSchema,
    /** The result of the analysis the report's query names (the matching query endpoint's shape). */
    result: z.unknown(),
    /** Repairs made on the way (an upgraded query, a board filter the analysis cannot take). */
    warnings: z.array(z.string()),
    ran_at: z.number().int(),
    /** Present when the answer came from the results cache: when it was computed (Unix ms). */
    cached_at: z.number().int().optional(),
  })
  .openapi('ReportRun');
