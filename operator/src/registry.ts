import type { AnyOperatorKind } from './kinds/kind.js';
import { organization } from './kinds/organization.js';
import { project } from './kinds/project.js';
import { flagSecret } from './kinds/flagsecret.js';
import { featureFlag } from './kinds/featureflag.js';
import { apiToken } from './kinds/apitoken.js';
import { experiment } from './kinds/experiment.js';

/**
 * The operator's kinds: the one list the controller (informers, watches, reconcile), the RBAC
 * rules, the metrics and the CRD generator iterate. Adding a kind is a module in kinds/ (with its
 * schemas in resources/) and one line here. Built on first use, so that kind modules may import
 * what imports this file.
 */
let kinds: readonly AnyOperatorKind[] | undefined;
export function operatorKinds(): readonly AnyOperatorKind[] {
  kinds ??= [
    organization,
    project,
    flagSecret,
    featureFlag,
    apiToken,
    experiment,
  ];
  return kinds;
}

export function kindNamed(name: string): AnyOperatorKind | undefined {
  return operatorKinds().find((k) => k.definition.kind === name);
}

/** A kind's plural (its CRD's `<plural>.<group>`, its API path). */
export const pluralOf = (kind: string) => definitionOf(kind).plural;
export const isClusterScoped = (kind: string) => definitionOf(kind).scope === 'Cluster';

function definitionOf(kind: string) {
  const k = kindNamed(kind);
  if (!k) throw new Error(`unknown kind ${kind}`);
  return k.definition;
}
