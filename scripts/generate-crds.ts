/**
 * Generates crds/*.yaml from the zod schemas in operator/src/resources (one source of truth: the
 * FeatureFlag spec is the service's own flag body schema). `npm run crds:generate` writes the
 * files; `--check` exits 1 when the committed files differ from what this would write.
 *
 * zod 4 gives JSON Schema in the OpenAPI 3.0 dialect; `toStructural` turns that into what the
 * API server accepts as a structural schema: no `$ref`, no `additionalProperties: false` next to
 * `properties` (unknown fields are pruned anyway), `nullable` instead of type arrays, and
 * `x-kubernetes-preserve-unknown-fields` where the schema accepts any value.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { stringify } from 'yaml';
import { GROUP, VERSION, type KindDefinition } from '../operator/src/resources/index.js';
import { operatorKinds } from '../operator/src/registry.js';

type JsonSchema = Record<string, unknown>;

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CRD_DIR = join(repoRoot, 'crds');

/** Keys a structural schema may carry (apiextensions.k8s.io/v1 JSONSchemaProps we use). */
const ALLOWED = new Set([
  'type', 'format', 'description', 'default', 'nullable', 'enum', 'properties', 'required', 'items',
  'additionalProperties', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength',
  'maxLength', 'pattern', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-list-type', 'x-kubernetes-list-map-keys',
  'x-kubernetes-validations', 'x-kubernetes-int-or-string', 'x-kubernetes-map-type', 'x-kubernetes-embedded-resource',
]);

export function toStructural(schema: JsonSchema, path = '$'): JsonSchema {
  for (const key of ['$ref', 'anyOf', 'oneOf', 'allOf', 'not']) {
    if (key in schema) throw new Error(`${path}: ${key} has no structural form here; change the zod schema`);
  }
  if (Array.isArray(schema.type)) throw new Error(`${path}: type arrays are not structural`);
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$schema' || key === 'id' || key === 'title') continue;
    if (!ALLOWED.has(key)) throw new Error(`${path}: ${key} is not supported in a CRD schema`);
    out[key] = value;
  }
  if (schema.type === undefined && schema.enum === undefined) {
    // z.unknown(): any JSON value, kept as sent.
    return { ...out, 'x-kubernetes-preserve-unknown-fields': true, nullable: true };
  }
  if (schema.properties) {
    const props: Record<string, JsonSchema> = {};
    for (const [name, sub] of Object.entries(schema.properties as Record<string, JsonSchema>)) {
      props[name] = toStructural(sub, `${path}.${name}`);
    }
    out.properties = props;
    if (schema.additionalProperties === false || schema.additionalProperties === undefined) delete out.additionalProperties;
  }
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    out.additionalProperties = toStructural(schema.additionalProperties as JsonSchema, `${path}[*]`);
  }
  if (schema.items) out.items = toStructural(schema.items as JsonSchema, `${path}[]`);
  if (Array.isArray(out.required) && out.required.length === 0) delete out.required;
  return out;
}

function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', reused: 'inline', unrepresentable: 'throw' }) as JsonSchema;
}

const READY_COLUMN = { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' };
const REASON_COLUMN = { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 };
const AGE_COLUMN = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export function crdFor(def: KindDefinition): Record<string, unknown> {
  const spec = toStructural(jsonSchemaOf(def.spec), '$.spec');
  const status = toStructural(jsonSchemaOf(def.status), '$.status');
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${GROUP}`,
      // Argo CD never prunes or deletes a CRD (deleting one deletes every resource of its kind, and
      // the operator would then delete what their deletion policies say); Helm's keep is added in the chart.
      annotations: { 'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false' },
    },
    spec: {
      group: GROUP,
      scope: def.scope ?? 'Namespaced',
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ['tally'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.readyLast
            ? [...def.columns, READY_COLUMN, REASON_COLUMN, AGE_COLUMN]
            : [READY_COLUMN, REASON_COLUMN, ...def.columns, AGE_COLUMN],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec,
                status,
              },
            },
          },
        },
      ],
    },
  };
}

const HEADER = '# Generated by scripts/generate-crds.ts from operator/src/resources (npm run crds:generate). Do not edit.\n';

export function fileNameOf(def: KindDefinition): string {
  return `${def.singular}.yaml`;
}

/** Every file of crds/ this generator owns, by name, with its content. */
export function renderCrds(): Record<string, string> {
  const files: Record<string, string> = {};
  const KINDS = operatorKinds().map((k) => k.definition);
  for (const def of KINDS) files[fileNameOf(def)] = HEADER + stringify(crdFor(def), { lineWidth: 0 });
  files['kustomization.yaml'] =
    HEADER +
    stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: KINDS.map(fileNameOf) });
  return files;
}

/** Names of the committed files that differ from the generator's output. */
export async function driftedCrds(): Promise<string[]> {
  const drifted: string[] = [];
  for (const [name, content] of Object.entries(renderCrds())) {
    const current = await readFile(join(CRD_DIR, name), 'utf8').catch(() => undefined);
    if (current !== content) drifted.push(name);
  }
  return drifted;
}

async function main(): Promise<void> {
  if (process.argv.includes('--check')) {
    const drifted = await driftedCrds();
    if (drifted.length > 0) {
      console.error(`crds out of date: ${drifted.join(', ')} (run npm run crds:generate)`);
      process.exit(1);
    }
    return;
  }
  for (const [name, content] of Object.entries(renderCrds())) await writeFile(join(CRD_DIR, name), content);
  console.log(`wrote ${Object.keys(renderCrds()).map((n) => `crds/${n}`).join(', ')}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
