/** The operator's custom resources: zod schemas of spec and status, TS types, CRD facts. */
export * from './meta.js';
export * from './organization.js';
export * from './project.js';
export * from './flagsecret.js';
export * from './featureflag.js';
export * from './apitoken.js';
export * from './experiment.js';
import { ORGANIZATION } from './organization.js';
import { PROJECT } from './project.js';
import { FLAG_SECRET } from './flagsecret.js';
import { FEATURE_FLAG } from './featureflag.js';
import { API_TOKEN } from './apitoken.js';
import { EXPERIMENT } from './experiment.js';

export const KINDS = [ORGANIZATION, PROJECT, FLAG_SECRET, FEATURE_FLAG, API_TOKEN, EXPERIMENT] as const;
