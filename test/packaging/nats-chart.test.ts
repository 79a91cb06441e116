import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { JetStreamBuffer } from '../../apps/server/src/ports/buffer/jetstream.js';
import { natsConfig } from '../../apps/server/src/ports/buffer/jetstream-config.js';
import { envOf, find, helmTemplate, validateObject, type K8sObject } from '../support/chart.js';
import { freePort, tempDir } from '../support/processes.js';
import { SecuredNats, makeTestPki } from '../support/pipeline.js';

/**
 * The chart's NATS pieces: the bundled server's config (credentials from the credentials Secret,
 * TLS by value), what the API and the worker are given to reach it or an external NATS (env and
 * mounted files), values refused with a message, and the rendered config run by a real
 * nats-server that the service's client, given the rendered env, logs into.
 */
const WORKLOADS = [['Deployment', 'tally-api'], ['Deployment', 'tally-worker']] as const;
const EXTERNAL = ['nats.enabled=false', 'externalNats.url=nats://nats.example:4222'];

async function render(set: string[]): Promise<K8sObject[]> {
  const r = await helmTemplate('tally', { set });
  assert.ok(r.ok, `helm template failed: ${r.stderr}`);
  for (const o of r.objects) await validateObject(o);
  return r.objects;
}
const container = (o: K8sObject[], kind: string, name: string) => find(o, kind, name).spec.template.spec.containers[0];
const podSpec = (o: K8sObject[], kind: string, name: string) => find(o, kind, name).spec.template.spec;
const natsConf = (o: K8sObject[]) => find(o, 'ConfigMap', 'tally-nats-config').data['nats.conf'] as string;

/** The files a workload mounts for its NATS client: path in the pod -> [Secret, key]. */
function natsFiles(o: K8sObject[], kind: string, name: string): Record<string, [string, string]> {
  const spec = podSpec(o, kind, name);
  const mount = spec.containers[0].volumeMounts.find((m: { name: string }) => m.name === 'nats-client');
  const volume = spec.volumes.find((v: { name: string }) => v.name === 'nats-client');
  assert.equal(!!mount, !!volume, `${name}: nats-client mounted and declared together`);
  if (!volume) return {};
  const out: Record<string, [string, string]> = {};
  for (const src of volume.projected.sources) for (const item of src.secret.items) out[`${mount.mountPath}/${item.path}`] = [src.secret.name, item.key];
  return out;
}

describe('chart: NATS credentials and TLS', function () {
  this.timeout(120_000);

  it('bundled NATS by default: a user whose password is generated into the credentials Secret, given to the server and to the API and worker; no TLS', async function () {
    const o = await render([]);
    const secret = find(o, 'Secret', 'tally-credentials');
    const password = Buffer.from(secret.data.NATS_PASSWORD, 'base64').toString();
    assert.match(password, /^np_[A-Za-z0-9]{40}$/, 'starts with letters: nats-server would read digits first as a number');
    assert.match(natsConf(o), /authorization \{ user: \$NATS_USER, password: \$NATS_PASSWORD \}/);
    assert.doesNotMatch(natsConf(o), /tls/);
    const server = container(o, 'StatefulSet', 'tally-nats');
    assert.deepEqual(server.args, ['--config=/etc/nats/nats.conf', '--jetstream']);
    assert.equal(envOf(server).get('NATS_USER')?.value, 'tally');
    const fromSecret = { secretKeyRef: { name: 'tally-credentials', key: 'NATS_PASSWORD' } };
    assert.deepEqual(envOf(server).get('NATS_PASSWORD')?.valueFrom, fromSecret);
    for (const [kind, name] of WORKLOADS) {
      const env = envOf(container(o, kind, name));
      assert.equal(env.get('NATS_URL')?.value, 'nats://tally-nats:4222', name);
      assert.equal(env.get('NATS_USER')?.value, 'tally', name);
      assert.deepEqual(env.get('NATS_PASSWORD')?.valueFrom, fromSecret, name);
      for (const v of ['NATS_TOKEN', 'NATS_CREDS', 'NATS_TLS_CA', 'NATS_TLS_CERT', 'NATS_TLS_KEY']) assert.equal(env.get(v), undefined, `${name} ${v}`);
      assert.deepEqual(natsFiles(o, kind, name), {}, name);
    }
    // The Secret is kept by the generation logic's lookup on upgrade; here (no cluster) it is new each time.
    const again = Buffer.from(find(await render([]), 'Secret', 'tally-credentials').data.NATS_PASSWORD, 'base64').toString();
    assert.notEqual(again, password);
  });

  it('bundled NATS with nats.tls.secretName: the server serves that certificate; the API and worker verify it with its ca.crt', async function () {
    const o = await render(['nats.tls.secretName=nats-tls']);
    assert.match(natsConf(o), /tls \{ cert_file: \/etc\/nats\/tls\/tls\.crt, key_file: \/etc\/nats\/tls\/tls\.key/);
    const spec = podSpec(o, 'StatefulSet', 'tally-nats');
    assert.deepEqual(spec.volumes.find((v: { name: string }) => v.name === 'tls')?.secret.secretName, 'nats-tls');
    assert.ok(spec.containers[0].volumeMounts.some((m: { name: string; mountPath: string }) => m.name === 'tls' && m.mountPath === '/etc/nats/tls'));
    for (const [kind, name] of WORKLOADS) {
      const env = envOf(container(o, kind, name));
      assert.equal(env.get('NATS_TLS_CA')?.value, '/etc/tally/nats/ca.crt', name);
      assert.deepEqual(natsFiles(o, kind, name), { '/etc/tally/nats/ca.crt': ['nats-tls', 'ca.crt'] }, name);
    }
    // Switching TLS on restarts the server (the config is read at start).
    const before = find(await render([]), 'StatefulSet', 'tally-nats').spec.template.metadata.annotations['checksum/config'];
    assert.notEqual(find(o, 'StatefulSet', 'tally-nats').spec.template.metadata.annotations['checksum/config'], before);
  });

  it('nats.auth.enabled=false: no password generated, none given', async function () {
    const o = await render(['nats.auth.enabled=false']);
    assert.equal(find(o, 'Secret', 'tally-credentials').data.NATS_PASSWORD, undefined);
    assert.doesNotMatch(natsConf(o), /authorization/);
    for (const [kind, name] of WORKLOADS) assert.equal(envOf(container(o, kind, name)).get('NATS_PASSWORD'), undefined);
  });

  it('credentials.existingSecret: the bundled NATS password is read from it (secretKeys.natsPassword)', async function () {
    const o = await render(['credentials.existingSecret=mine', 'credentials.secretKeys.natsPassword=nats-pw']);
    const ref = { secretKeyRef: { name: 'mine', key: 'nats-pw' } };
    assert.deepEqual(envOf(container(o, 'StatefulSet', 'tally-nats')).get('NATS_PASSWORD')?.valueFrom, ref);
    for (const [kind, name] of WORKLOADS) assert.deepEqual(envOf(container(o, kind, name)).get('NATS_PASSWORD')?.valueFrom, ref);
  });

  it('external NATS: a user and password, a token or a .creds file, a CA and a client certificate, each from the named Secrets', async function () {
    const user = await render([...EXTERNAL, 'externalNats.auth.existingSecret=nats-login', 'externalNats.auth.user=ingest', 'externalNats.auth.passwordKey=password', 'externalNats.tls.caSecret=corp-ca']);
    const token = await render([...EXTERNAL, 'externalNats.auth.existingSecret=nats-login', 'externalNats.auth.tokenKey=token']);
    const creds = await render([...EXTERNAL, 'externalNats.auth.existingSecret=nats-login', 'externalNats.auth.credsKey=tally.creds', 'externalNats.tls.caSecret=corp-ca', 'externalNats.tls.caKey=root.pem', 'externalNats.tls.clientCertSecret=tally-client']);
    const none = await render(EXTERNAL);
    for (const [kind, name] of WORKLOADS) {
      const u = envOf(container(user, kind, name));
      assert.equal(u.get('NATS_USER')?.value, 'ingest');
      assert.deepEqual(u.get('NATS_PASSWORD')?.valueFrom, { secretKeyRef: { name: 'nats-login', key: 'password' } });
      assert.equal(u.get('NATS_TLS_CA')?.value, '/etc/tally/nats/ca.crt');
      assert.deepEqual(natsFiles(user, kind, name), { '/etc/tally/nats/ca.crt': ['corp-ca', 'ca.crt'] });

      const t = envOf(container(token, kind, name));
      assert.deepEqual(t.get('NATS_TOKEN')?.valueFrom, { secretKeyRef: { name: 'nats-login', key: 'token' } });
      assert.equal(t.get('NATS_USER'), undefined);
      assert.deepEqual(natsFiles(token, kind, name), {});

      const c = envOf(container(creds, kind, name));
      assert.equal(c.get('NATS_CREDS')?.value, '/etc/tally/nats/user.creds');
      assert.equal(c.get('NATS_TLS_CERT')?.value, '/etc/tally/nats/tls.crt');
      assert.equal(c.get('NATS_TLS_KEY')?.value, '/etc/tally/nats/tls.key');
      assert.deepEqual(natsFiles(creds, kind, name), {
        '/etc/tally/nats/user.creds': ['nats-login', 'tally.creds'],
        '/etc/tally/nats/ca.crt': ['corp-ca', 'root.pem'],
        '/etc/tally/nats/tls.crt': ['tally-client', 'tls.crt'],
        '/etc/tally/nats/tls.key': ['tally-client', 'tls.key'],
      });

      const n = envOf(container(none, kind, name));
      for (const v of ['NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN', 'NATS_CREDS', 'NATS_TLS_CA']) assert.equal(n.get(v), undefined, `${name} ${v}`);
    }
    // An external NATS needs no password of ours.
    assert.equal(find(user, 'Secret', 'tally-credentials').data.NATS_PASSWORD, undefined);
  });

  describe('external NATS values that cannot work fail helm template, naming them', function () {
    const cases: Array<[string, string[], RegExp]> = [
      ['two ways to log in', ['externalNats.auth.existingSecret=s', 'externalNats.auth.tokenKey=t', 'externalNats.auth.credsKey=c'], /externalNats\.auth: set only one of passwordKey, tokenKey and credsKey \(got tokenKey, credsKey\)/],
      ['a key without its Secret', ['externalNats.auth.tokenKey=t'], /externalNats\.auth\.existingSecret is required with externalNats\.auth\.tokenKey/],
      ['a password without a user', ['externalNats.auth.existingSecret=s', 'externalNats.auth.passwordKey=p'], /externalNats\.auth\.user is required/],
      ['a user without a password', ['externalNats.auth.existingSecret=s', 'externalNats.auth.user=u'], /externalNats\.auth\.passwordKey is required/],
      ['an unknown key', ['externalNats.tls.ca=x'], /ca/],
    ];
    for (const [title, set, message] of cases) {
      it(title, async function () {
        const r = await helmTemplate('tally', { set: [...EXTERNAL, ...set] });
        assert.equal(r.ok, false, `${title}: rendered anyway`);
        assert.match(r.stderr, message);
      });
    }
  });

  it("the rendered bundled config runs in nats-server and the service's client, given the rendered env, logs in over TLS; a wrong password is refused", async function () {
    const o = await render(['nats.tls.secretName=nats-tls']);
    const dir = tempDir('nats-chart-');
    try {
      // The pod's paths, here: the Secret's files where the StatefulSet and the API mount them.
      const pki = makeTestPki(dir);
      fs.mkdirSync(path.join(dir, 'server-tls'));
      fs.copyFileSync(pki.serverCert, path.join(dir, 'server-tls/tls.crt'));
      fs.copyFileSync(pki.serverKey, path.join(dir, 'server-tls/tls.key'));
      const port = await freePort();
      const config = natsConf(o)
        .replace(/^port: 4222$/m, `host: 127.0.0.1\nport: ${port}`)
        .replace(/^http_port: 8222$/m, `http_port: ${await freePort()}`)
        .replace('store_dir: /data', `store_dir: ${JSON.stringify(path.join(dir, 'store'))}`)
        .replaceAll('/etc/nats/tls/', `${dir}/server-tls/`);
      assert.notEqual(config, natsConf(o));
      const password = Buffer.from(find(o, 'Secret', 'tally-credentials').data.NATS_PASSWORD, 'base64').toString();
      const serverEnv = envOf(container(o, 'StatefulSet', 'tally-nats'));
      fs.mkdirSync(path.join(dir, 'run'));
      const s = await SecuredNats.run(port, path.join(dir, 'run'), config, { NATS_USER: serverEnv.get('NATS_USER')!.value!, NATS_PASSWORD: password });
      try {
        const apiEnv = envOf(container(o, 'Deployment', 'tally-api'));
        const clientEnv = (pw: string) => ({
          NATS_URL: `nats://127.0.0.1:${port}`,
          NATS_USER: apiEnv.get('NATS_USER')!.value!,
          NATS_PASSWORD: pw,
          NATS_TLS_CA: apiEnv.get('NATS_TLS_CA')!.value!.replace('/etc/tally/nats/ca.crt', pki.ca),
          NATS_STREAM: `C_${randomBytes(4).toString('hex')}`,
          NATS_STREAM_STORAGE: 'memory',
        });
        const good = clientEnv(password);
        const buffer = await JetStreamBuffer.open(good.NATS_URL, natsConfig(good));
        try {
          await buffer.publish({ id: 'chart-1', kind: 'track', projectId: 1, acceptedAt: Date.now(), records: [] });
          await buffer.ping();
        } finally {
          await buffer.close();
        }
        const bad = clientEnv('np_wrong');
        await assert.rejects(JetStreamBuffer.open(bad.NATS_URL, natsConfig(bad)), /NATS: cannot connect .*authorization refused/);
      } finally {
        await s.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
