/**
 * The API's shapes, inferred from the server's own zod schemas (type-only imports: nothing of the
 * server reaches the bundle). When a schema changes, the console's typecheck
 * (`npm run typecheck:console`) points at every page that reads it.
 */
import type { z } from 'zod';
import type {
  ProjectListItemSchema, CohortSchema, BoardListItemSchema, BoardRunSchema, BoardWithCardsSchema, CardSchema, BoardCardWrite, ReportRunSchema, SavedReportSchema, ReportType, DateRangeSpec, QueryV2, Metric, EventMetric, Compare, TrendResultSchema, IrFunnelResultSchema, DrilldownPage, DrilldownSelection, PropertyFilter, SegmentationResult, FunnelStep, RetentionRow, FlowsResult, SessionsResult, LexiconEventSchema, LexiconPropertySchema, EventNameCountSchema, PropertySummarySchema, Role,
} from '@tally-analytics/server/schemas';

export type { DateRangeSpec, QueryV2, Metric, EventMetric, Compare, PropertyFilter, SegmentationResult, FunnelStep, RetentionRow, FlowsResult, SessionsResult, DrilldownPage, DrilldownSelection, ReportType, Role, BoardCardWrite };
export type Project = z.infer<typeof ProjectListItemSchema>;
export type Board = z.infer<typeof BoardWithCardsSchema>;
export type BoardListItem = z.infer<typeof BoardListItemSchema>;
export type Card = z.infer<typeof CardSchema>;
export type BoardRun = z.infer<typeof BoardRunSchema>;
export type CardRun = BoardRun['cards'][number];
export type SavedReport = z.infer<typeof SavedReportSchema>;
export type ReportRun = z.infer<typeof ReportRunSchema>;
export type TrendResult = z.infer<typeof TrendResultSchema>;
export type IrFunnelResult = z.infer<typeof IrFunnelResultSchema>;
export type LexiconEvent = z.infer<typeof LexiconEventSchema>;
export type LexiconProperty = z.infer<typeof LexiconPropertySchema>;
export type EventNameCount = z.infer<typeof EventNameCountSchema>;
export type PropertySummary = z.infer<typeof PropertySummarySchema>;
export type Cohort = z.infer<typeof CohortSchema>;

/** `GET /api/account` (the server declares this schema inside its route file). */
export interface Account {
  superadmin: boolean;
  user: { id: number; email: string | null; name: string | null } | null;
  memberships: Array<{ org_id: number; org_name: string; role: Role }>;
  organization: { id: number; name: string } | null;
  role: Role | null;
}
