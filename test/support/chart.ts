import { execFile } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { grantsFromManifests, type Grant } from './kube/rbac.js';
import { kubeTools } from './kube/tools.js';

/** Rendering the Helm chart and kustomize trees with the real helm 3.17 / kubectl 1.32 binaries. */

const run = promisify(execFile);
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const CHART_DIR = join(repoRoot, 'charts/tally');

// Manifests are loose JSON trees; tests read them by path.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; [k: string]: any };

export interface RenderResult {
  ok: boolean;
  objects: K8sObject[];
  stderr: string;
}

function parse(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null && typeof o === 'object');
}

async function exec(file: string, args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(file, args, { maxBuffer: 32 << 20, cwd: repoRoot });
    return { ok: true, stdout, stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, stdout: e.stdout ?? '', stderr: e.stderr || e.message };
  }
}

/** `helm template <release> charts/tally` with `--set`-style values (a flat list of `a.b=c`) and/or values files. */
export async function helmTemplate(release: string, opts: { set?: string[]; setString?: string[]; files?: string[]; namespace?: string } = {}): Promise<RenderResult> {
  const { helm } = await kubeTools();
  const args = ['template', release, CHART_DIR, '--namespace', opts.namespace ?? 'tally'];
  for (const s of opts.set ?? []) args.push('--set', s);
  for (const s of opts.setString ?? []) args.push('--set-string', s);
  for (const f of opts.files ?? []) args.push('-f', f);
  const r = await exec(helm, args);
  return { ok: r.ok, objects: r.ok ? parse(r.stdout) : [], stderr: r.stderr };
}

export async function helmLint(opts: { set?: string[]; files?: string[] } = {}): Promise<{ ok: boolean; output: string }> {
  const { helm } = await kubeTools();
  const args = ['lint', '--strict', CHART_DIR];
  for (const s of opts.set ?? []) args.push('--set', s);
  for (const f of opts.files ?? []) args.push('-f', f);
  const r = await exec(helm, args);
  return { ok: r.ok, output: r.stdout + r.stderr };
}

export async function kustomize(dir: string): Promise<RenderResult> {
  const { kubectl } = await kubeTools();
  const r = await exec(kubectl, ['kustomize', join(repoRoot, dir)]);
  return { ok: r.ok, objects: r.ok ? parse(r.stdout) : [], stderr: r.stderr };
}

/**
 * Validates an object against the Kubernetes OpenAPI schema of its kind (kubernetes-models);
 * throws naming the object and the failing field. Kinds outside Kubernetes itself (the
 * prometheus-operator's ServiceMonitor) get a structural check of the fields the chart sets.
 */
export async function validateObject(o: K8sObject): Promise<void> {
  const where = `${o.kind}/${o.metadata?.name}`;
  if (o.apiVersion === 'monitoring.coreos.com/v1' && o.kind === 'ServiceMonitor') {
    if (!o.spec?.selector?.matchLabels || !Array.isArray(o.spec.endpoints) || o.spec.endpoints.length === 0) throw new Error(`${where}: selector and endpoints required`);
    for (const e of o.spec.endpoints) if (typeof e.port !== 'string' || !/^\d+s$/.test(String(e.interval ?? '30s'))) throw new Error(`${where}: bad endpoint ${JSON.stringify(e)}`);
    return;
  }
  let mod: Record<string, new (data: unknown) => { validate(): void }>;
  try {
    mod = await import(`kubernetes-models/${o.apiVersion}/${o.kind}`);
  } catch {
    throw new Error(`${where}: no Kubernetes schema for ${o.apiVersion} ${o.kind}`);
  }
  const Model = mod[o.kind];
  if (!Model) throw new Error(`${where}: no model ${o.kind}`);
  try {
    new Model(o).validate();
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
}

/** Pod templates of workloads, with the workload they belong to. */
export function podTemplates(objects: K8sObject[]): Array<{ owner: K8sObject; template: K8sObject['spec'] }> {
  return objects.filter((o) => ['Deployment', 'StatefulSet'].includes(o.kind)).map((o) => ({ owner: o, template: o.spec.template }));
}

export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind}/${name} in: ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o;
}

export function envOf(container: { env?: Array<{ name: string; value?: string; valueFrom?: any }> }): Map<string, { value?: string; valueFrom?: any }> {
  return new Map((container.env ?? []).map((e) => [e.name, e]));
}

/**
 * NOTES.txt as `helm install` would print it: `helm template` skips NOTES.txt, so a copy of the
 * chart renders it through `tpl` into a ConfigMap.
 */
export async function renderNotes(release: string, set: string[] = []): Promise<string> {
  const { cp, mkdtemp, rm, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const dir = await mkdtemp(join(tmpdir(), 'tally-notes-'));
  try {
    const chart = join(dir, 'tally');
    await cp(CHART_DIR, chart, { recursive: true });
    await cp(join(chart, 'templates/NOTES.txt'), join(chart, 'notes.txt'));
    await writeFile(join(chart, 'templates/zz-notes.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: notes }\ndata:\n  notes: {{ tpl (.Files.Get "notes.txt") . | quote }}\n');
    const { helm } = await kubeTools();
    const args = ['template', release, chart, '--namespace', 'tally', '--show-only', 'templates/zz-notes.yaml'];
    for (const s of set) args.push('--set', s);
    const r = await exec(helm, args);
    if (!r.ok) throw new Error(r.stderr);
    return (parse(r.stdout)[0] as K8sObject).data.notes as string;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The rules the rendered (Cluster)RoleBindings give a ServiceAccount, each in its binding's scope. */
export function boundTo(objects: K8sObject[], namespace: string, serviceAccount: string): Grant[] {
  const grants: Grant[] = [];
  for (const b of objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
    if (!b.subjects.some((s: K8sObject) => s.kind === 'ServiceAccount' && s.name === serviceAccount && s.namespace === namespace)) continue;
    const role = objects.find((o) => o.kind === b.roleRef.kind && o.metadata.name === b.roleRef.name && (o.kind === 'ClusterRole' || o.metadata.namespace === b.metadata.namespace));
    if (!role) throw new Error(`${b.kind}/${b.metadata.name}: no ${b.roleRef.kind}/${b.roleRef.name}`);
    const [grant] = grantsFromManifests([role]);
    grants.push(b.kind === 'RoleBinding' ? { namespace: b.metadata.namespace ?? namespace, rules: grant.rules } : grant);
  }
  return grants;
}
