/** The fake Kubernetes API for tests: see README.md. */
export { FakeKube, ADMIN, readRepoCrds, type FakeKubeOptions, type RequestRecord } from './server.js';
export { grantsFromManifests, grantsFromYaml, type Grant, type PolicyRule } from './rbac.js';
export { projectSecret, writeAtomically, type SecretProjection } from './projection.js';
export { kubeTools, type KubeTools } from './tools.js';
export { KubeError, type KubeObject, type ResourceType } from './types.js';
export { kubectlFor, type KubectlResult } from './kubectl.js';
