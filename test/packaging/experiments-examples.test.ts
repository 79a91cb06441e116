import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse, parseAllDocuments } from 'yaml';
import { Secret } from 'kubernetes-models/v1/Secret';
import { ExperimentSpecSchema } from '../../operator/src/resources/experiment.js';
import { CreateExperimentBody } from '../../apps/server/src/experiments/schema.js';
import { admit } from '../support/kube/schema.js';

/**
 * The worked manifests of k8s/examples/experiments as `kubectl apply` sends them: the Experiment
 * admitted by the committed CRD (crds/experiment.yaml: OpenAPI schema, pruning, defaults and its
 * CEL rules, as the API server applies them) with nothing pruned, its spec the operator's and its
 * body the experiments API's; its flagRef and projectRef name objects of k8s/examples/tenant, and
 * the control is one of that flag's variants. The same manifest broken in one place is refused
 * (the check is not a no-op). The AnalysisTemplate's Secret passes kubernetes-models validation.
 */
const docs = (file: string) => parseAllDocuments(readFileSync(new URL(`../../k8s/examples/${file}`, import.meta.url), 'utf8')).map((d) => d.toJS()).filter(Boolean);
const schema = parse(readFileSync(new URL('../../crds/experiment.yaml', import.meta.url), 'utf8')).spec.versions[0].schema.openAPIV3Schema;

describe('k8s/examples/experiments admission', () => {
  const [experiment] = docs('experiments/experiment.yaml');

  it('experiment.yaml: admitted by crds/experiment.yaml unchanged (no cause, nothing pruned), Delete by default', () => {
    assert.equal(experiment.apiVersion, 'analytics.tally.dev/v1');
    assert.equal(experiment.kind, 'Experiment');
    const result = admit(schema, experiment);
    assert.deepEqual(result.causes, []);
    assert.deepEqual(result.pruned, []);
    assert.equal((result.object.spec as { deletionPolicy: string }).deletionPolicy, 'Delete');
  });

  it('experiment.yaml: its spec is the operator\'s and its body the experiments API\'s', () => {
    const spec = ExperimentSpecSchema.safeParse(experiment.spec);
    assert.ok(spec.success, JSON.stringify(spec.error?.issues));
    const { projectRef: _p, flagRef, deletionPolicy: _d, ...rest } = experiment.spec;
    const body = CreateExperimentBody.safeParse({ ...rest, flagKey: flagRef.name });
    assert.ok(body.success, JSON.stringify(body.error?.issues));
  });

  it('experiment.yaml: flagRef and projectRef name objects of k8s/examples/tenant, the control one of the flag\'s variants, the primary metric one of its metrics', () => {
    const tenant = (parse(readFileSync(new URL('../../k8s/examples/tenant/kustomization.yaml', import.meta.url), 'utf8')).resources as string[]).flatMap((f) => docs(`tenant/${f}`));
    const flag = tenant.find((o) => o.kind === 'FeatureFlag' && o.metadata.name === experiment.spec.flagRef.name && o.metadata.namespace === experiment.metadata.namespace);
    assert.ok(flag, `FeatureFlag ${experiment.spec.flagRef.name} in ${experiment.metadata.namespace}`);
    assert.ok(flag.spec.variants.some((v: { key: string }) => v.key === experiment.spec.control), `control ${experiment.spec.control} among ${JSON.stringify(flag.spec.variants)}`);
    assert.equal(flag.spec.projectRef.name, experiment.spec.projectRef.name);
    assert.ok(tenant.some((o) => o.kind === 'Project' && o.metadata.name === experiment.spec.projectRef.name && o.metadata.namespace === experiment.metadata.namespace));
    assert.ok(experiment.spec.metrics.some((m: { id: string }) => m.id === experiment.spec.primaryMetricId));
  });

  it('the same manifest broken in one place is refused at admission, naming the field', () => {
    const broken = (edit: (spec: any) => void) => {
      const o = structuredClone(experiment);
      edit(o.spec);
      return admit(schema, o);
    };
    const messages = (r: ReturnType<typeof admit>) => r.causes.map((c) => `${c.field}: ${c.message}`).join('; ');
    const wrongKind = broken((s) => { s.metrics[0].kind = 'mean'; });
    assert.match(messages(wrongKind), /spec\.metrics\[0\]\.kind/);
    const both = broken((s) => { s.flagKey = 'checkout-button'; });
    assert.match(messages(both), /exactly one of flagRef and flagKey is required/);
    const noProperty = broken((s) => { delete s.metrics[1].property; });
    assert.match(messages(noProperty), /a sum metric needs its property/);
    const level = broken((s) => { s.confidenceLevel = 1; });
    assert.ok(level.causes.length > 0, 'a confidence level of 1 is refused');
    const unknown = broken((s) => { s.windowHours = 24; });
    assert.deepEqual(unknown.pruned, ['spec.windowHours'], 'an unknown field is pruned (kubectl --validate=strict refuses it)');
  });

  it('analysis-template.yaml: the Secret is a valid v1 Secret in the experiment\'s namespace', () => {
    const [secret] = docs('experiments/analysis-template.yaml');
    assert.equal(secret.kind, 'Secret');
    assert.doesNotThrow(() => new Secret(secret).validate());
    assert.equal(secret.metadata.namespace, experiment.metadata.namespace);
  });
});
