import { parseAllDocuments } from 'yaml';
import { KubeError } from './types.js';

/** RBAC as far as an operator's permissions go: Role (one namespace) and ClusterRole rules. */

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}

export interface Grant {
  /** A Role's namespace; undefined for a ClusterRole (every namespace and cluster scope). */
  namespace?: string;
  rules: PolicyRule[];
}

export interface Access {
  user: string;
  verb: string;
  group: string;
  /** `projects` or `projects/status`. */
  resource: string;
  name?: string;
  namespace?: string;
}

/** Grants from Role and ClusterRole manifests (for instance what `helm template` renders). */
export function grantsFromManifests(docs: any[]): Grant[] {
  const grants: Grant[] = [];
  for (const doc of docs) {
    if (!doc || doc.apiVersion !== 'rbac.authorization.k8s.io/v1') continue;
    if (doc.kind === 'Role') grants.push({ namespace: doc.metadata?.namespace ?? 'default', rules: doc.rules ?? [] });
    if (doc.kind === 'ClusterRole') grants.push({ rules: doc.rules ?? [] });
  }
  return grants;
}

/** Grants from a multi-document YAML text (`helm template charts/tally`, a kustomize build). */
export function grantsFromYaml(text: string): Grant[] {
  return grantsFromManifests(parseAllDocuments(text).map((d) => d.toJS()));
}

const has = (list: string[] | undefined, value: string) => (list ?? []).includes('*') || (list ?? []).includes(value);

function resourceMatches(rule: PolicyRule, resource: string): boolean {
  if (has(rule.resources, resource)) return true;
  const [main, sub] = resource.split('/');
  return sub !== undefined && ((rule.resources ?? []).includes(`*/${sub}`) || (rule.resources ?? []).includes(`${main}/*`));
}

export function allows(grants: Grant[], a: Access): boolean {
  return grants.some(
    (g) =>
      (g.namespace === undefined || g.namespace === a.namespace) &&
      g.rules.some(
        (r) =>
          has(r.verbs, a.verb) &&
          has(r.apiGroups, a.group) &&
          resourceMatches(r, a.resource) &&
          (!r.resourceNames || r.resourceNames.length === 0 || (a.name !== undefined && r.resourceNames.includes(a.name))),
      ),
  );
}

/** The API server's 403 for a refused request. */
export function forbidden(a: Access): KubeError {
  const [main] = a.resource.split('/');
  const what = `${main}${a.group ? `.${a.group}` : ''}${a.name ? ` "${a.name}"` : ''}`;
  const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  return new KubeError(
    403,
    'Forbidden',
    `${what} is forbidden: User "${a.user}" cannot ${a.verb} resource "${a.resource}" in API group "${a.group}" ${scope}`,
    { name: a.name, group: a.group || undefined, kind: main },
  );
}
