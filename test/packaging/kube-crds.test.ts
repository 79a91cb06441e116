import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { CRD_DIR, driftedCrds, renderCrds } from '../../scripts/generate-crds.js';
import fc from 'fast-check';
import { FeatureFlagSpecSchema, FlagSecretSpecSchema, ProjectSpecSchema } from '../../operator/src/resources/index.js';
import { operatorKinds } from '../../operator/src/registry.js';

const KINDS = operatorKinds().map((k) => k.definition);
import { admit } from '../support/kube/schema.js';

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
    assert.deepEqual(kustomization.resources, ['organization.yaml', 'project.yaml', 'flagsecret.yaml', 'featureflag.yaml', 'apitoken.yaml', 'experiment.yaml']);
    for (const def of KINDS) {
      const crd = await committed(`${def.singular}.yaml`);
      const version = crd.spec.versions[0];
      assert.deepEqual(untypedNodes(version.schema.openAPIV3Schema, def.kind, []), []);
      assert.deepEqual(version.subresources, { status: {} });
      const columns = version.additionalPrinterColumns.map((c: any) => c.name);
      const own = ({ Organization: ['ID', 'Events', 'Quota'], ApiToken: ['Organization', 'Role', 'Secret'], Experiment: ['Flag', 'Exposures', 'Decision'] } as Record<string, string[]>)[def.kind] ?? ['Project ID'];
      for (const name of ['Ready', ...own, 'Age']) assert.ok(columns.includes(name), `${def.kind} column ${name}`);
      assert.equal(crd.spec.scope, def.kind === 'Organization' ? 'Cluster' : 'Namespaced');
      assert.ok(crd.spec.names.shortNames.length > 0);
      const status = version.schema.openAPIV3Schema.properties.status.properties;
      assert.equal(status.conditions['x-kubernetes-list-type'], 'map');
      assert.deepEqual(status.conditions.items.required, ['type', 'status', 'lastTransitionTime', 'reason', 'message']);
      assert.equal(status.observedGeneration.type, 'integer');
    }
  });

  it('Experiment: texp, columns FLAG EXPOSURES DECISION READY, the API body with projectRef and flagRef or flagKey as CEL', () => {
    const crd = parse(renderCrds()['experiment.yaml']);
    const version = crd.spec.versions[0];
    assert.deepEqual(crd.spec.names.shortNames, ['texp']);
    assert.deepEqual(version.additionalPrinterColumns.filter((c: any) => !c.priority).map((c: any) => c.name), ['Flag', 'Exposures', 'Decision', 'Ready', 'Age']);
    const spec = version.schema.openAPIV3Schema.properties.spec;
    assert.deepEqual(spec.required.sort(), ['key', 'metrics', 'projectRef']);
    assert.deepEqual(spec.properties.deletionPolicy.default, 'Delete');
    assert.deepEqual(spec.properties.metrics.items.properties.kind.enum, ['conversion', 'count', 'sum']);
    assert.ok(spec['x-kubernetes-validations'].some((v: any) => v.rule === 'has(self.flagRef) != has(self.flagKey)'));
    const status = version.schema.openAPIV3Schema.properties.status.properties;
    assert.deepEqual(status.decision.enum, ['Inconclusive', 'Winner', 'Loser', 'SampleRatioMismatch']);
    assert.equal(status.exposures.additionalProperties.type, 'integer');
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
    // Tenancy: the organisation by reference (immutable), exactly one of ref and id, limits' bounds.
    assert.deepEqual(project['x-kubernetes-validations'].map((v: any) => v.rule), ['has(self.organizationRef) != has(self.organizationId)']);
    assert.equal(project.properties.organizationRef['x-kubernetes-validations'][0].rule, 'self == oldSelf');
    assert.deepEqual([project.properties.retentionDays.minimum, project.properties.retentionDays.maximum], [1, 3650]);
    assert.equal(project.properties.rateLimit.properties.requestsPer10Seconds.minimum, 1);
    const orgCrd = parse(files['organization.yaml']);
    const org = orgCrd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    assert.deepEqual(orgCrd.spec.names.shortNames, ['torg']);
    assert.equal(org.properties.namespaces.minItems, 1);
    assert.deepEqual(org.properties.members.items.properties.role.enum, ['viewer', 'member', 'admin', 'owner']);
    assert.deepEqual(orgCrd.spec.versions[0].additionalPrinterColumns.filter((c: any) => !c.priority).map((c: any) => c.name), ['ID', 'Events', 'Quota', 'Ready', 'Age']);
    const tokCrd = parse(files['apitoken.yaml']);
    const tok = tokCrd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    assert.deepEqual(tokCrd.spec.names.shortNames, ['ttok']);
    assert.deepEqual(tok.properties.role.enum, ['viewer', 'member', 'admin']);
    assert.equal(tok.properties.organizationRef['x-kubernetes-validations'][0].rule, 'self == oldSelf');
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

  describe('admission by the CRD schema agrees with the zod schema (fast-check)', () => {
    const files = renderCrds();
    const schemas = new Map<string, any>();
    const schemaOf = (file: string) => {
      if (!schemas.has(file)) schemas.set(file, parse(files[file]).spec.versions[0].schema.openAPIV3Schema);
      return schemas.get(file);
    };
    /** Admitted as kubectl sends it (fieldValidation=Strict: an unknown field is a refusal). */
    const admitted = (file: string, kind: string, spec: unknown) => {
      const result = admit(schemaOf(file), { apiVersion: 'analytics.tally.dev/v1', kind, metadata: { name: 'x' }, spec });
      return result.causes.length === 0 && result.pruned.length === 0;
    };
    // Mostly valid values (up to every bound), one time in nine past a bound or of the wrong type.
    const w = <T, U>(valid: fc.Arbitrary<T>, wrong: fc.Arbitrary<U>) => fc.oneof({ arbitrary: valid, weight: 8 }, { arbitrary: wrong, weight: 1 });
    const pct = w(fc.integer({ min: 0, max: 100 }), fc.constantFrom(-1, 101, 50.5, '50', null));
    const variant = fc.record(
      { key: w(fc.constantFrom('on', 'off', 'x'.repeat(200)), fc.constantFrom('', 'x'.repeat(201), 3)), rolloutPct: pct, payload: fc.jsonValue({ maxDepth: 2 }) },
      { requiredKeys: ['key', 'rolloutPct'] },
    );
    const ids = w(
      fc.oneof(fc.array(fc.constantFrom('u1', 'x'.repeat(255)), { maxLength: 3 }), fc.array(fc.constant('u'), { minLength: 50, maxLength: 50 })),
      fc.oneof(fc.array(fc.constant('u'), { minLength: 51, maxLength: 51 }), fc.constant(['']), fc.constant(['x'.repeat(256)]), fc.constant([7])),
    );
    const rule = fc.record(
      {
        rolloutPct: pct,
        cohortId: w(fc.constantFrom(1, 3, Number.MAX_SAFE_INTEGER), fc.constantFrom(0, -1, 1.5, '3')),
        distinctIds: ids,
        variant: w(fc.constantFrom('on', 'x'), fc.constant(7)),
      },
      { requiredKeys: ['rolloutPct'] },
    );
    const list = <T>(item: fc.Arbitrary<T>) => w(fc.oneof(fc.array(item, { maxLength: 3 }), fc.array(item, { minLength: 10, maxLength: 10 })), fc.oneof(fc.array(item, { minLength: 11, maxLength: 11 }), fc.constant('none')));
    const ref = w(fc.record({ name: fc.constantFrom('shop', 'a.b-c', 'x'.repeat(253)) }), fc.constantFrom({ name: 'Bad_Name' }, { name: '' }, {}, 'shop'));
    const policy = w(fc.constantFrom('Retain', 'Delete'), fc.constantFrom('Keep', 3));
    /** Drops a required member now and then, adds an unknown one now and then. */
    const reshape = (required: string[]) => (s: Record<string, unknown>, r: number) => {
      const out = { ...s };
      if (r % 23 === 0) delete out[required[r % required.length]];
      if (r % 29 === 1) out.color = 'blue';
      return out;
    };
    it('FeatureFlag spec', () => {
      const spec = fc
        .tuple(
          fc.record(
            {
              key: w(fc.constantFrom('k', 'new-checkout', 'a_1', 'x'.repeat(200)), fc.constantFrom('', 'Bad Key', '-lead', 'x'.repeat(201), 7, null)),
              name: w(fc.constantFrom('N', 'New checkout', 'x'.repeat(500)), fc.constantFrom('', 'x'.repeat(501), 5, null)),
              description: w(fc.constantFrom(null, '', 'd'), fc.constantFrom(7, 'x'.repeat(10_001))),
              active: w(fc.boolean(), fc.constant('yes')),
              type: w(fc.constantFrom('release', 'kill_switch'), fc.constant('nope')),
              // Random percentages rarely sum to 100 (a CEL rule): lists that do are mixed in.
              variants: fc.oneof(list(variant), fc.constantFrom([{ key: 'on', rolloutPct: 100 }], [{ key: 'on', rolloutPct: 60 }, { key: 'off', rolloutPct: 40 }])),
              rules: list(rule),
              projectRef: ref,
              deletionPolicy: policy,
            },
            { requiredKeys: ['key', 'name', 'projectRef'] },
          ),
          fc.nat(),
        )
        .map(([s, r]) => reshape(['key', 'name', 'projectRef'])(s, r));
      let accepted = 0;
      fc.assert(
        fc.property(spec, (s) => {
          const ok = admitted('featureflag.yaml', 'FeatureFlag', s);
          if (ok) accepted++;
          return ok === FeatureFlagSpecSchema.safeParse(s).success;
        }),
        { numRuns: 1500 },
      );
      assert.ok(accepted > 50 && accepted < 1450, `both outcomes sampled (accepted ${accepted} of 1500)`);
      // The one known difference, which the operator reports as Ready=False/Invalid.
      assert.ok(admitted('featureflag.yaml', 'FeatureFlag', { key: 'k', name: ' ', projectRef: { name: 'p' } }));
      assert.equal(FeatureFlagSpecSchema.safeParse({ key: 'k', name: ' ', projectRef: { name: 'p' } }).success, false);
    });

    it('Project and FlagSecret specs', () => {
      const project = fc
        .tuple(
          fc.record(
            {
              displayName: w(fc.constantFrom('Shop', 'x'.repeat(200)), fc.constantFrom('', 'x'.repeat(201), 3)),
              organizationId: w(fc.constantFrom(1, 3, Number.MAX_SAFE_INTEGER), fc.constantFrom(0, -1, 1.5, '1', Number.MAX_SAFE_INTEGER + 2)),
              organizationRef: w(fc.constantFrom({ name: 'acme' }, { name: 'a.b' }), fc.constantFrom({ name: 'Acme' }, {}, 3)),
              retentionDays: w(fc.constantFrom(1, 30, 3650), fc.constantFrom(0, 3651, 1.5, '30')),
              rateLimit: w(fc.constantFrom({ requestsPer10Seconds: 1 }, { requestsPer10Seconds: 1_000_000 }), fc.constantFrom({ requestsPer10Seconds: 0 }, {}, 5)),
              deletionPolicy: policy,
            },
            { requiredKeys: ['displayName'] },
          ),
          fc.nat(),
        )
        .map(([s, r]) => reshape(['displayName', 'organizationId'])(s, r));
      fc.assert(fc.property(project, (s) => admitted('project.yaml', 'Project', s) === ProjectSpecSchema.safeParse(s).success), { numRuns: 500 });
      assert.ok(fc.sample(project, 200).some((s) => admitted('project.yaml', 'Project', s)) && fc.sample(project, 200).some((s) => !admitted('project.yaml', 'Project', s)));
      const flagSecret = fc
        .tuple(
          fc.record(
            {
              projectRef: ref,
              secretRef: w(
                fc.record({ name: fc.constantFrom('s', 'x'.repeat(253)), key: fc.constantFrom('secret', 'tls.key', 'a_b-1') }, { requiredKeys: ['name'] }),
                fc.constantFrom({ name: 'Bad_Name' }, { key: 'secret' }, { name: 's', key: 'a/b' }, { name: 's', key: '' }, 7),
              ),
            },
            { requiredKeys: ['projectRef'] },
          ),
          fc.nat(),
        )
        .map(([s, r]) => reshape(['projectRef'])(s, r));
      fc.assert(fc.property(flagSecret, (s) => admitted('flagsecret.yaml', 'FlagSecret', s) === FlagSecretSpecSchema.safeParse(s).success), { numRuns: 500 });
      assert.ok(fc.sample(flagSecret, 200).some((s) => admitted('flagsecret.yaml', 'FlagSecret', s)) && fc.sample(flagSecret, 200).some((s) => !admitted('flagsecret.yaml', 'FlagSecret', s)));
    });
  });
});
