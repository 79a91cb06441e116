/**
 * The operator's custom resources: zod schemas of spec and status, TS types, CRD facts. The list of
 * kinds is the registry's (operator/src/registry.ts: `operatorKinds()`, each with its definition).
 */
export * from './meta.js';
export * from './organization.js';
export * from './project.js';
export * from './flagsecret.js';
export * from './featureflag.js';
export * from './apitoken.js';
export * from './experiment.js';
