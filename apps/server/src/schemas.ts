/**
 * Public entry `@tally-analytics/server/schemas`: the API's resource schemas other packages reuse.
 * - The operator validates Project, Organization and FeatureFlag specs with the zod schemas the API
 *   applies, so a spec the CRD accepts is one the API accepts (values, loaded at run time).
 * - The console infers the API's request and response shapes from them (types only: erased at
 *   build, so nothing of the server reaches its bundle).
 * Only schema modules here: importing this entry loads zod, not the service.
 */
export { ProjectName } from './projects/schema.js';
export { OrgName } from './orgs/schema.js';
export { CreateFlagBody, FlagKey, flagConsistencyError } from './flags/schema.js';
export { CreateExperimentBody, DECISIONS } from './experiments/schema.js';

export type { ProjectListItemSchema } from './projects/schema.js';
export type { BoardListItemSchema, BoardRunSchema, BoardWithCardsSchema, CardSchema, BoardCardWrite } from './boards/schema.js';
export type { ReportRunSchema, SavedReportSchema, ReportType } from './reports/schema.js';
export type { DateRangeSpec, Metric, EventMetric, Compare } from './query/ir/schema.js';
export type { QueryV2 } from './query/ir/document.js';
export type { TrendResultSchema, IrFunnelResultSchema } from './query/ir/results.js';
export type { DrilldownPage, DrilldownSelection } from './query/ir/drilldown.js';
export type { PropertyFilter, SegmentationResult, FunnelStep, RetentionRow, FlowsResult, SessionsResult } from './query/schema.js';
export type { LexiconEventSchema, LexiconPropertySchema } from './lexicon/schema.js';
export type { LexiconEntryBody } from './lexicon/schema.js';
export type { AnnotationSchema } from './annotations/schema.js';
export type { EventNameCountSchema, PropertySummarySchema, EventsResultSchema, UserDetailSchema, UsersResultSchema } from './data/schema.js';
export type { FeatureFlagSchema, FlagEventSchema, FlagResultSchema, FlagRuleSchema, FlagVariantSchema } from './flags/schema.js';
export type { CohortSchema, CohortMembersSchema, CohortPreviewSchema } from './cohorts/schema.js';
export type { PrivacyRequestSchema } from './privacy/schema.js';
export type { Role } from './auth/roles.js';
