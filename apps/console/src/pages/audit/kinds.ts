/**
 * The audit log's actor and target kinds, as the filters offer them. The server does not export
 * its lists to the console (only types cross, and these are values); test/browser/console-audit.test.ts
 * fails when they differ from apps/server/src/audit/schema.ts.
 */
export const ACTOR_KINDS = ['user', 'token', 'superadmin', 'operator'] as const;
export type ActorKind = (typeof ACTOR_KINDS)[number];

export const TARGET_KINDS = [
  'organization', 'membership', 'group_mapping', 'project', 'token', 'flag_secret', 'flag', 'experiment',
  'report', 'board', 'cohort', 'derived_event', 'calculated_metric', 'annotation', 'lexicon', 'privacy_request',
] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

/** `group_mapping` → `group mapping`. */
export const spoken = (kind: string) => kind.replace(/_/g, ' ');
