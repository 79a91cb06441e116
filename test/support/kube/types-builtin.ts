import type { ResourceType } from './types.js';

/** The built-in resources the fake serves (what an operator, kubectl and helm touch). */
const builtin = (t: Partial<ResourceType> & Pick<ResourceType, 'group' | 'version' | 'plural' | 'singular' | 'kind'>): ResourceType => ({
  listKind: `${t.kind}List`,
  namespaced: true,
  shortNames: [],
  categories: [],
  statusSubresource: false,
  generational: false,
  unconditionalUpdate: true,
  strategicMerge: true,
  columns: [],
  custom: false,
  ...t,
});

export const BUILTIN_TYPES: ResourceType[] = [
  builtin({
    group: '',
    version: 'v1',
    plural: 'secrets',
    singular: 'secret',
    kind: 'Secret',
    columns: [
      { name: 'Type', type: 'string', jsonPath: '.type' },
      { name: 'Data', type: 'integer', jsonPath: '.data', compute: (o) => Object.keys((o.data as object) ?? {}).length },
    ],
  }),
  builtin({ group: '', version: 'v1', plural: 'configmaps', singular: 'configmap', kind: 'ConfigMap', shortNames: ['cm'] }),
  builtin({
    group: '',
    version: 'v1',
    plural: 'events',
    singular: 'event',
    kind: 'Event',
    shortNames: ['ev'],
    columns: [
      { name: 'Type', type: 'string', jsonPath: '.type' },
      { name: 'Reason', type: 'string', jsonPath: '.reason' },
      { name: 'Object', type: 'string', jsonPath: '.involvedObject.name' },
      { name: 'Message', type: 'string', jsonPath: '.message' },
    ],
  }),
  builtin({ group: '', version: 'v1', plural: 'namespaces', singular: 'namespace', kind: 'Namespace', namespaced: false, shortNames: ['ns'] }),
  builtin({
    group: 'events.k8s.io',
    version: 'v1',
    plural: 'events',
    singular: 'event',
    kind: 'Event',
    shortNames: ['ev'],
    columns: [
      { name: 'Type', type: 'string', jsonPath: '.type' },
      { name: 'Reason', type: 'string', jsonPath: '.reason' },
      { name: 'Object', type: 'string', jsonPath: '.regarding.name' },
      { name: 'Note', type: 'string', jsonPath: '.note' },
    ],
  }),
  builtin({
    group: 'coordination.k8s.io',
    version: 'v1',
    plural: 'leases',
    singular: 'lease',
    kind: 'Lease',
    columns: [{ name: 'Holder', type: 'string', jsonPath: '.spec.holderIdentity' }],
  }),
  builtin({
    group: 'apiextensions.k8s.io',
    version: 'v1',
    plural: 'customresourcedefinitions',
    singular: 'customresourcedefinition',
    kind: 'CustomResourceDefinition',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    statusSubresource: true,
    generational: true,
    strategicMerge: true,
    columns: [{ name: 'Created At', type: 'string', jsonPath: '.metadata.creationTimestamp' }],
  }),
  // Evaluated on every create and update (admission.ts).
  builtin({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    plural: 'validatingadmissionpolicies',
    singular: 'validatingadmissionpolicy',
    kind: 'ValidatingAdmissionPolicy',
    namespaced: false,
    statusSubresource: true,
    generational: true,
  }),
  builtin({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    plural: 'validatingadmissionpolicybindings',
    singular: 'validatingadmissionpolicybinding',
    kind: 'ValidatingAdmissionPolicyBinding',
    namespaced: false,
    generational: true,
  }),
];

/** The served type of a CRD's storage version. */
export function typeFromCrd(crd: any): ResourceType {
  const version = crd.spec.versions.find((v: any) => v.storage) ?? crd.spec.versions[0];
  return {
    group: crd.spec.group,
    version: version.name,
    plural: crd.spec.names.plural,
    singular: crd.spec.names.singular ?? crd.spec.names.kind.toLowerCase(),
    kind: crd.spec.names.kind,
    listKind: crd.spec.names.listKind ?? `${crd.spec.names.kind}List`,
    namespaced: crd.spec.scope === 'Namespaced',
    shortNames: crd.spec.names.shortNames ?? [],
    categories: crd.spec.names.categories ?? [],
    schema: version.schema?.openAPIV3Schema,
    statusSubresource: Boolean(version.subresources?.status),
    generational: true,
    unconditionalUpdate: false,
    strategicMerge: false,
    columns: version.additionalPrinterColumns ?? [],
    custom: true,
  };
}
