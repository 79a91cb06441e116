import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { CRD_DIR, driftedCrds, renderCrds } from '../scripts/generate-crds.js';
import { FeatureFlagSpecSchema, KINDS, ProjectSpecSchema } from '../operator/src/resources/index.js';

async function committed(name: string): Promise<any> {
  return parse(await readFile(join(CRD_DIR, name), 'utf8'));
}

/** Every schema node must say its type (or keep unknown fields), the structural rule. */
function untypedNodes(schema: any, path: string, out: string[]): string[] {
  if (!schema.type && !schema['x-kubernetes-preserve-unknown-fields'] && !schema['x-kubernetes-int-or-string']) out.push(path);
  for (const [k, v] of Object.entries(schema.properties ?? {})) untypedNodes(v, `${path}.${k}`, out);
  if (schema.items) untypedNodes(schema.items, `${path}[]`, out);
  for (const key of ['$ref', 'anyOf', 'oneOf', 'allOf']) if (key in schema) out.push(`${path}: ${key}`);
  return out;
}

describe('CRDs (crds/)', () => {
  it('are exactly what scripts/generate-crds.ts writes from the zod schemas (run npm run crds:generate)', async () => {
    assert.deepEqual(await driftedCrds(), []);
  });

  it('pass kubernetes-models validation of apiextensions.k8s.io/v1 CustomResourceDefinition', async () => {
    for (const def of KINDS) {
      const crd = await committed(`${def.singular}.yaml`);
      assert.doesNotThrow(() => new CustomResourceDefinition(crd).validate(), def.kind);
      assert.equal(crd.metadata.name, `${def.plural}.analytics.tally.dev`);
    }
    // The validator is not a no-op: a wrong type in the CRD itself is refused.
    const broken = await committed('project.yaml');
    broken.spec.versions[0].served = 'yes';
    assert.throws(() => new CustomResourceDefinition(broken).validate());
  });

  it('are structural, with status subresource, printer columns, short names and the kustomization', async () => {
    const kustomization = await committed('kustomization.yaml');
    assert.deepEqual(kustomization.resources, ['project.yaml', 'flagsecret.yaml', 'featureflag.yaml']);
    for (const def of KINDS) {
      const crd = await committed(`${def.singular}.yaml`);
      const version = crd.spec.versions[0];
      assert.deepEqual(untypedNodes(version.schema.openAPIV3Schema, def.kind, []), []);
      assert.deepEqual(version.subresources, { status: {} });
      const columns = version.additionalPrinterColumns.map((c: any) => c.name);
      for (const name of ['Ready', 'Project ID', 'Age']) assert.ok(columns.includes(name), `${def.kind} column ${name}`);
      assert.ok(crd.spec.names.shortNames.length > 0);
      const status = version.schema.openAPIV3Schema.properties.status.properties;
      assert.equal(status.conditions['x-kubernetes-list-type'], 'map');
      assert.deepEqual(status.conditions.items.required, ['type', 'status', 'lastTransitionTime', 'reason', 'message']);
      assert.equal(status.observedGeneration.type, 'integer');
    }
  });

  it('carry the contract bounds: flag key pattern, rolloutPct, variants, rules, overrides, policies, immutability', () => {
    const files = renderCrds();
    const ff = parse(files['featureflag.yaml']).spec.versions[0].schema.openAPIV3Schema.properties.spec;
    assert.equal(ff.properties.key.pattern, '^[a-z0-9][a-z0-9_-]{0,199}$');
    assert.deepEqual([ff.properties.variants.maxItems, ff.properties.rules.maxItems], [10, 10]);
    const rule = ff.properties.rules.items.properties;
    assert.deepEqual([rule.rolloutPct.minimum, rule.rolloutPct.maximum], [0, 100]);
    assert.deepEqual([rule.distinctIds.maxItems, rule.distinctIds.items.maxLength], [50, 255]);
    assert.deepEqual(ff.properties.deletionPolicy, { default: 'Delete', type: 'string', enum: ['Retain', 'Delete'] });
    assert.deepEqual(ff.required.sort(), ['key', 'name', 'projectRef']);
    const project = parse(files['project.yaml']).spec.versions[0].schema.openAPIV3Schema.properties.spec;
    assert.equal(project.properties.deletionPolicy.default, 'Retain');
    assert.deepEqual(project.properties.organizationId['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'organizationId is immutable' },
    ]);
    const fs = parse(files['flagsecret.yaml']).spec.versions[0].schema.openAPIV3Schema.properties.spec;
    assert.equal(fs.properties.secretRef.properties.key.default, 'secret');
  });

  it('types the specs with the service schemas (zod agrees with the CRD on defaults and bounds)', () => {
    assert.equal(ProjectSpecSchema.parse({ displayName: 'Shop', organizationId: 1 }).deletionPolicy, 'Retain');
    const flag = FeatureFlagSpecSchema.parse({ key: 'new-checkout', name: 'New checkout', projectRef: { name: 'shop' } });
    assert.equal(flag.deletionPolicy, 'Delete');
    assert.equal(FeatureFlagSpecSchema.safeParse({ key: 'Bad Key', name: 'x', projectRef: { name: 'shop' } }).success, false);
    assert.equal(
      FeatureFlagSpecSchema.safeParse({ key: 'k', name: 'x', projectRef: { name: 'shop' }, rules: [{ rolloutPct: 101 }] }).success,
      false,
    );
  });
});
