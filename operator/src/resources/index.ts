/** The operator's three custom resources: zod schemas of spec and status, TS types, CRD facts. */
export * from './meta.js';
export * from './project.js';
export * from './flagsecret.js';
export * from './featureflag.js';
import { PROJECT } from './project.js';
import { FLAG_SECRET } from './flagsecret.js';
import { FEATURE_FLAG } from './featureflag.js';

export const KINDS = [PROJECT, FLAG_SECRET, FEATURE_FLAG] as const;
