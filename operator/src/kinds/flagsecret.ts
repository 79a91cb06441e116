import { createHash, randomUUID } from 'node:crypto';
import { API_VERSION, keyOf, type BaseStatus, type Resource } from '../kinds.js';
import { FLAG_SECRET } from '../resources/flagsecret.js';
import { statusOf } from '../kube.js';
import { ApiError } from '../tally-api.js';
import {
  apiFailure, ensureFinalizer, flagSecretSecretKey, flagSecretSecretName, hasFinalizer, notReady, ready, referencedProject,
  removeFinalizer, winningFlagSecret, type Outcome, type ReconcileContext,
} from '../reconcile/context.js';
import { appearedOrGone, referringTo, throughProject, type KindReconciler, type OperatorKind } from './kind.js';

export interface FlagSecretSpec { projectRef: { name: string }; secretRef?: { name: string; key?: string } }
export interface FlagSecretStatus extends BaseStatus { projectId?: number; secretName?: string }
export type FlagSecretResource = Resource<'FlagSecret', FlagSecretSpec, FlagSecretStatus>;

declare module '../kinds.js' {
  interface KindResources { FlagSecret: FlagSecretResource }
}

/**
 * FlagSecret: enqueued when its Project appears, goes or changes its record, when another
 * FlagSecret of the same Project appears or goes (it may win or lose the conflict now), and when
 * its Secret changes (a labelled one it minted, or the one secretRef names, watched by name).
 */
export const flagSecret: OperatorKind<'FlagSecret'> = {
  definition: FLAG_SECRET,
  reconciler: (ctx) => new FlagSecretReconciler(ctx),
  watches: [
    { kind: 'Project', when: appearedOrGone, afterRecordChange: true, map: (ctx, project) => referringTo(ctx.cache('FlagSecret'), project) },
    {
      kind: 'FlagSecret',
      when: appearedOrGone,
      map: (ctx, fs) => ctx.cache('FlagSecret').list().filter((o) =>
        o.metadata.namespace === fs.metadata.namespace && o.spec?.projectRef?.name === fs.spec?.projectRef?.name && o.metadata.uid !== fs.metadata.uid),
    },
  ],
  feedsTenantConfig: true,
  secretName: (fs) => flagSecretSecretName(fs),
  referencedSecrets: (objs) => objs.filter((f) => f.spec?.secretRef && !f.metadata.deletionTimestamp).map((f) => [f.metadata.namespace, flagSecretSecretName(f)]),
  actsFor: throughProject,
};

/**
 * FlagSecret → the project's flag secret. Without secretRef a uuid is minted into the Secret
 * `<name>-flag-secret` (key `secret`, owned by the FlagSecret, so it goes with it); with secretRef
 * the named Secret's key is used and a change of it rotates the flag secret. Deletion revokes.
 * Only the oldest FlagSecret of a Project acts; the others are `Conflict`.
 */
class FlagSecretReconciler implements KindReconciler<FlagSecretResource> {
  /** `<projectId>:<sha256>` last set per FlagSecret uid, so an unchanged secret is not sent again. */
  private readonly applied = new Map<string, string>();

  constructor(private readonly ctx: ReconcileContext) {}

  async reconcile(obj: FlagSecretResource): Promise<Outcome> {
    const resource = keyOf(obj);
    const outcome = await this.reconcileLive(obj, resource);
    // The record says which project's flag secret this resource set (the tenant config reads it, not status).
    const { records } = this.ctx;
    if (outcome.ready?.status === 'True') records.flagSecrets.set(resource, outcome.fields!.projectId as number);
    else if (!outcome.retry) records.flagSecrets.delete(resource);
    return outcome;
  }

  private async reconcileLive(obj: FlagSecretResource, resource: string): Promise<Outcome> {
    const ctx = this.ctx;

    const ref = referencedProject(ctx, obj);
    if (!('projectId' in ref)) return ref;
    const { projectId } = ref;
    const winner = winningFlagSecret(ctx, obj.metadata.namespace, obj.spec.projectRef.name);
    if (winner && winner.metadata.uid !== obj.metadata.uid) {
      return notReady('Conflict', `FlagSecret ${winner.metadata.name} already provides the flag secret of Project ${obj.spec.projectRef.name}`, { fields: { projectId } });
    }

    obj = await ensureFinalizer(ctx, obj);
    const secretName = flagSecretSecretName(obj);
    const key = flagSecretSecretKey(obj);
    const got = await this.secretValue(obj, secretName, key);
    if (!('value' in got)) return { ...got, fields: { projectId, secretName } };

    const fingerprint = `${projectId}:${createHash('sha256').update(got.value).digest('hex')}`;
    if (this.applied.get(obj.metadata.uid) !== fingerprint) {
      try {
        await ctx.api.setFlagSecret(projectId, got.value, resource);
      } catch (err) {
        return { ...apiFailure(err, `flag secret of project ${projectId}`), fields: { projectId, secretName } };
      }
      this.applied.set(obj.metadata.uid, fingerprint);
    }
    return ready(`flag secret of project ${projectId} from Secret ${secretName}`, { projectId, secretName });
  }

  /** The secret's value (trimmed), minting the owned Secret when there is no secretRef. */
  private async secretValue(obj: FlagSecretResource, secretName: string, key: string): Promise<{ value: string } | Outcome> {
    const { namespace } = obj.metadata;
    let secret = await this.ctx.kube.readSecret(namespace, secretName);
    if (!secret && !obj.spec.secretRef) {
      try {
        secret = await this.ctx.kube.createSecret(namespace, {
          apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
          metadata: {
            name: secretName, namespace,
            labels: { 'app.kubernetes.io/managed-by': 'tally-operator' },
            ownerReferences: [{ apiVersion: API_VERSION, kind: 'FlagSecret', name: obj.metadata.name, uid: obj.metadata.uid, controller: true, blockOwnerDeletion: true }],
          },
          stringData: undefined,
          data: { secret: Buffer.from(randomUUID()).toString('base64') },
        });
      } catch (err) {
        if (statusOf(err) !== 409) throw err;
        secret = await this.ctx.kube.readSecret(namespace, secretName);
      }
    }
    if (!secret) return notReady('SecretNotFound', `Secret ${namespace}/${secretName} does not exist`);
    if (!obj.spec.secretRef && !(secret.metadata?.ownerReferences ?? []).some((o) => o.uid === obj.metadata.uid)) {
      return notReady('Conflict', `Secret ${namespace}/${secretName} exists and is not owned by this FlagSecret`);
    }
    const raw = secret.data?.[key];
    if (raw === undefined) return notReady('Invalid', `Secret ${namespace}/${secretName} has no key "${key}"`);
    const value = Buffer.from(raw, 'base64').toString('utf8').trim();
    if (value === '') return notReady('Invalid', `Secret ${namespace}/${secretName} key "${key}" is empty`);
    return { value };
  }

  async finalize(obj: FlagSecretResource): Promise<Outcome | 'gone'> {
    const resource = keyOf(obj);
    if (!hasFinalizer(obj)) return 'gone';
    // Only a flag secret the service records as set by this very resource is revoked: the
    // project comes from the records (never status), and the service checks the owner again.
    const projectId = this.projectManaged(obj, resource);
    if (projectId) {
      try {
        await this.ctx.api.revokeFlagSecret(projectId, resource);
      } catch (err) {
        // 404: the project is gone; 409: another FlagSecret provides it (this one lost a conflict).
        if (!(err instanceof ApiError && (err.kind === 'not_found' || err.kind === 'conflict'))) return apiFailure(err, `revoking the flag secret of project ${projectId}`);
      }
    }
    this.applied.delete(obj.metadata.uid);
    await removeFinalizer(this.ctx, obj);
    return 'gone';
  }

  /**
   * The project whose flag secret this resource set, by the records: the one it last set, else
   * (after a restart) its Project's when it is the FlagSecret that provides it. Never a status id:
   * the service lets a resource revoke an unmanaged secret, so the id must be our own project's.
   */
  private projectManaged(obj: FlagSecretResource, resource: string): number | undefined {
    const { records } = this.ctx;
    const set = records.flagSecrets.get(resource);
    if (set) return set;
    const name = obj.spec?.projectRef?.name ?? '';
    const referenced = this.ctx.cache('Project').get(obj.metadata.namespace, name);
    const winner = winningFlagSecret(this.ctx, obj.metadata.namespace, name, true);
    return referenced && winner?.metadata.uid === obj.metadata.uid ? records.projects.get(keyOf(referenced))?.projectId : undefined;
  }
}
