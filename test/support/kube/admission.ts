import { compile, toCel } from './schema.js';
import type { Store } from './store.js';
import { KubeError, qualifiedName, type FieldCause, type KubeObject, type ResourceType } from './types.js';

/**
 * ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) as the API server applies it: every
 * stored policy with a binding is matched against a create or update (matchConstraints and the
 * binding's matchResources: resource rules with operations, scope and resourceNames, exclusions,
 * namespace and object selectors), then its matchConditions, variables and validations are
 * evaluated in CEL over `object`, `oldObject`, `request` (userInfo, operation, …),
 * `namespaceObject` and `variables`. A binding whose actions include Deny refuses the request in
 * the API server's words (`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with
 * binding '<b>' denied request: <message>`) with the validation's reason (default Invalid) and
 * its code. Not covered: params (paramKind/paramRef: such a policy is refused when stored, so
 * nothing is silently unchecked), Warn and Audit actions (not reported), DELETE and CONNECT,
 * the `authorizer` variable, type checking and cost limits.
 */

export const POLICY_KEY = 'admissionregistration.k8s.io/validatingadmissionpolicies';
export const BINDING_KEY = 'admissionregistration.k8s.io/validatingadmissionpolicybindings';

export interface UserInfo {
  username: string;
  groups: string[];
}

export interface AdmissionAttributes {
  type: ResourceType;
  subresource?: string;
  namespace?: string;
  name: string;
  operation: 'CREATE' | 'UPDATE';
  object: KubeObject;
  oldObject?: KubeObject;
  user: UserInfo;
  dryRun: boolean;
}

interface Rule {
  apiGroups?: string[];
  apiVersions?: string[];
  operations?: string[];
  resources?: string[];
  resourceNames?: string[];
  scope?: string;
}
interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}
interface MatchResources {
  resourceRules?: Rule[];
  excludeResourceRules?: Rule[];
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
}

const some = (list: string[] | undefined, value: string) => (list ?? []).includes('*') || (list ?? []).includes(value);

function ruleMatches(rule: Rule, a: AdmissionAttributes, operation = true): boolean {
  const resource = a.subresource ? `${a.type.plural}/${a.subresource}` : a.type.plural;
  const resources = rule.resources ?? [];
  const resourceOk = resources.some((r) => {
    if (r === '*/*' || r === resource) return true;
    const [main, sub] = r.split('/');
    // "*" and "pods" name main resources only; "pods/*" and "*/status" reach subresources.
    if (sub === undefined) return main === '*' && !a.subresource;
    return (main === '*' || main === a.type.plural) && (sub === '*' || sub === a.subresource) && a.subresource !== undefined;
  });
  const scope = rule.scope ?? '*';
  const scopeOk = scope === '*' || (scope === 'Namespaced') === a.type.namespaced;
  const namesOk = !rule.resourceNames?.length || rule.resourceNames.includes(a.name);
  return (!operation || some(rule.operations, a.operation)) && some(rule.apiGroups, a.type.group) && some(rule.apiVersions, a.type.version) && resourceOk && scopeOk && namesOk;
}

function selects(selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector) return true;
  const l = labels ?? {};
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => l[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    if (operator === 'In') return key in l && values.includes(l[key]);
    if (operator === 'NotIn') return !(key in l) || !values.includes(l[key]);
    if (operator === 'Exists') return key in l;
    if (operator === 'DoesNotExist') return !(key in l);
    return false;
  });
  return byLabels && byExpressions;
}

function resourcesMatch(m: MatchResources | undefined, a: AdmissionAttributes, namespaceObject: KubeObject | undefined, requireRules: boolean): boolean {
  if (!m) return !requireRules;
  const rules = m.resourceRules ?? [];
  if (rules.length > 0 ? !rules.some((r) => ruleMatches(r, a)) : requireRules) return false;
  if ((m.excludeResourceRules ?? []).some((r) => ruleMatches(r, a, false))) return false;
  // Cluster-scoped objects are not subject to a namespace selector.
  if (a.type.namespaced && !selects(m.namespaceSelector, namespaceObject?.metadata.labels)) return false;
  return selects(m.objectSelector, a.object.metadata.labels) || (a.oldObject !== undefined && selects(m.objectSelector, a.oldObject.metadata.labels));
}

/** Expressions of a policy this fake cannot parse, or features it does not evaluate: refused when stored. */
export function policyProblems(policy: KubeObject): FieldCause[] {
  const spec = (policy.spec ?? {}) as Record<string, any>;
  const causes: FieldCause[] = [];
  if (spec.paramKind) causes.push({ reason: 'FieldValueNotSupported', field: 'spec.paramKind', message: 'Unsupported value: this fake API server evaluates policies without params' });
  const check = (field: string, expression: unknown) => {
    if (typeof expression !== 'string' || !expression) return void causes.push({ reason: 'FieldValueRequired', field, message: 'Required value: expression is required' });
    try {
      compile(expression);
    } catch (err) {
      causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(expression)}: compilation failed: ${(err as Error).message.split('\n')[0]}` });
    }
  };
  (spec.matchConditions ?? []).forEach((c: any, i: number) => check(`spec.matchConditions[${i}].expression`, c.expression));
  (spec.variables ?? []).forEach((v: any, i: number) => check(`spec.variables[${i}].expression`, v.expression));
  (spec.validations ?? []).forEach((v: any, i: number) => {
    check(`spec.validations[${i}].expression`, v.expression);
    if (v.messageExpression) check(`spec.validations[${i}].messageExpression`, v.messageExpression);
  });
  return causes;
}

const REASON_CODES: Record<string, number> = { Unauthorized: 401, Forbidden: 403, Invalid: 422, RequestEntityTooLarge: 413 };

type Decision = { message: string; reason: string } | undefined;

/** Evaluates one policy for one request: a denial, or undefined when it allows or does not apply. */
function evaluate(policy: KubeObject, a: AdmissionAttributes, namespaceObject: KubeObject | undefined): Decision {
  const spec = policy.spec as Record<string, any>;
  const failClosed = (spec.failurePolicy ?? 'Fail') === 'Fail';
  const gvr = { group: a.type.group, version: a.type.version, resource: a.type.plural };
  const gvk = { group: a.type.group, version: a.type.version, kind: a.type.kind };
  const request = {
    kind: gvk, resource: gvr, requestKind: gvk, requestResource: gvr, subResource: a.subresource ?? '',
    name: a.name, namespace: a.namespace ?? '', operation: a.operation,
    userInfo: { username: a.user.username, groups: a.user.groups }, dryRun: a.dryRun, options: {},
  };
  // Variables are computed when first read (as the API server does), so one never read cannot fail a request.
  const variables: Record<string, unknown> = {};
  const activation = {
    object: toCel(a.object), oldObject: a.oldObject ? toCel(a.oldObject) : null, request: toCel(request),
    params: null, namespaceObject: namespaceObject ? toCel(namespaceObject) : null, variables,
  };
  for (const v of spec.variables ?? []) {
    let cached: { value: unknown } | undefined;
    Object.defineProperty(variables, v.name, { enumerable: true, get: () => (cached ??= { value: compile(v.expression)(activation) }).value });
  }
  const run = (expression: string): { value?: unknown; error?: string } => {
    try {
      return { value: compile(expression)(activation) };
    } catch (err) {
      return { error: `expression '${expression}' resulted in error: ${(err as Error).message.split('\n')[0]}` };
    }
  };
  for (const c of spec.matchConditions ?? []) {
    const r = run(c.expression);
    if (r.error) return failClosed ? { message: r.error, reason: 'Invalid' } : undefined;
    if (r.value !== true) return undefined;
  }
  for (const v of spec.validations ?? []) {
    const r = run(v.expression);
    if (r.error) {
      if (failClosed) return { message: r.error, reason: v.reason ?? 'Invalid' };
      continue;
    }
    if (r.value === true) continue;
    let message = v.message || `failed expression: ${v.expression.trim()}`;
    if (v.messageExpression) {
      const m = run(v.messageExpression);
      if (typeof m.value === 'string' && m.value.trim() && !m.value.includes('\n')) message = m.value;
    }
    return { message, reason: v.reason ?? 'Invalid' };
  }
  return undefined;
}

/** Runs every bound policy over a write; throws the API server's refusal for the first Deny. */
export function admitByPolicies(store: Store, a: AdmissionAttributes): void {
  const bindings = store.list(BINDING_KEY);
  if (bindings.length === 0) return;
  const namespaceObject = a.namespace ? store.get('/namespaces', undefined, a.namespace) : undefined;
  for (const policy of store.list(POLICY_KEY).sort((x, y) => x.metadata.name!.localeCompare(y.metadata.name!))) {
    const spec = policy.spec as Record<string, any>;
    if (!resourcesMatch(spec.matchConstraints, a, namespaceObject, true)) continue;
    for (const binding of bindings.filter((b) => (b.spec as any)?.policyName === policy.metadata.name).sort((x, y) => x.metadata.name!.localeCompare(y.metadata.name!))) {
      const bspec = binding.spec as Record<string, any>;
      if (!(bspec.validationActions ?? []).includes('Deny')) continue;
      if (bspec.matchResources && !resourcesMatch(bspec.matchResources, a, namespaceObject, false)) continue;
      const denied = evaluate(policy, a, namespaceObject);
      if (!denied) continue;
      const message = `ValidatingAdmissionPolicy '${policy.metadata.name}' with binding '${binding.metadata.name}' denied request: ${denied.message}`;
      throw new KubeError(REASON_CODES[denied.reason] ?? 422, denied.reason, `${qualifiedName(a.type)} "${a.name}" is forbidden: ${message}`, {
        name: a.name,
        group: a.type.group || undefined,
        kind: a.type.plural,
        causes: [{ message }],
      });
    }
  }
}
