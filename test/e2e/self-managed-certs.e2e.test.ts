// Self-managed certificates against a real kube-apiserver. Two replicas run startSelfManagedCertificates in
// two separate Node processes (test/e2e/support/cert-replica-main.ts), each with its own directory and its
// own client, authenticated as the sandbox-injector service account with the RBAC of manifests/base, filling
// the empty Secret manifests/base makes (the webhook may not create Secrets). Each
// directory is served by an HTTPS server that reloads on the ..data swap with the project's reloader, and
// kube-apiserver itself calls that server through the MutatingWebhookConfiguration, so its caBundle is
// checked by the real client that matters.
import { X509Certificate, randomBytes } from 'node:crypto';
import { lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AdmissionregistrationV1Api,
  type V1MutatingWebhookConfiguration,
  type V1Secret,
} from '@kubernetes/client-node';
import { parseAllDocuments, stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClients, type KubeClients } from '../../src/kube-client/clients.js';
import { waitUntil } from '../support/wait-until.js';
import { compileReplica, startReplica, type CompiledReplica, type Replica } from './support/cert-replicas.js';
import type { ReplicaLog } from './support/cert-replica-protocol.js';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { startTlsFileServer, type TlsFileServer } from './support/tls-file-server.js';

const NS = 'sandbox-injector-system';
const SECRET = 'sandbox-injector-tls';
const MWC = 'sandbox-injector';
const SERVER_NAME = 'sandbox-injector.sandbox-injector-system.svc';
const POD_NS = 'e2e-certs';
/** Long enough that only the test's clock jump promotes a staged CA. */
const CA_OVERLAP_MS = 60_000;

let cluster: TestCluster | undefined;
let admin: KubeClients | undefined;
let compiled: CompiledReplica | undefined;
let workDir = '';
let saKubeconfig = '';
/** The empty Secret of manifests/base, applied by the tests (not in beforeAll): first its absence is checked. */
let installSecret: object | undefined;
const replicas: Replica[] = [];
const servers: TlsFileServer[] = [];

function c(): TestCluster {
  if (cluster === undefined) throw new Error('cluster not started');
  return cluster;
}

function api(): { clients: KubeClients; admission: AdmissionregistrationV1Api } {
  if (admin === undefined) throw new Error('clients not made');
  return { clients: admin, admission: admin.kubeConfig.makeApiClient(AdmissionregistrationV1Api) };
}

function replica(i: number): Replica {
  const r = replicas[i];
  if (r === undefined) throw new Error(`replica ${i} not started`);
  return r;
}

function server(i: number): TlsFileServer {
  const s = servers[i];
  if (s === undefined) throw new Error(`server ${i} not started`);
  return s;
}

const decode = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');
const pems = (bundle: string): string[] =>
  bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g) ?? [];
const fingerprintOf = (pem: string): string => new X509Certificate(pem).fingerprint256;

async function secret(): Promise<V1Secret> {
  return api().clients.core.readNamespacedSecret({ name: SECRET, namespace: NS });
}

async function secretText(key: string): Promise<string | undefined> {
  const value = (await secret()).data?.[key];
  return value === undefined ? undefined : decode(value);
}

async function webhookConfig(): Promise<V1MutatingWebhookConfiguration> {
  return api().admission.readMutatingWebhookConfiguration({ name: MWC });
}

/** The caBundle of each webhook entry, as PEM. */
async function caBundles(): Promise<string[]> {
  return ((await webhookConfig()).webhooks ?? []).map((w) => decode(w.clientConfig.caBundle));
}

/** waitUntil as this suite asks it: `check` true within 30 s, the replicas' logs on a timeout. */
async function waitFor(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  await waitUntil(check, {
    what,
    timeoutMs: 30_000,
    intervalMs: 50,
    detail: () => replicas.map((r) => r.describeLogs()).join('\n'),
  });
}

/** `kubectl apply` of the install's Secret, client-side (as `kubectl apply -k` does) or server-side. */
async function applyInstallSecret(serverSide = false): Promise<void> {
  if (installSecret === undefined) throw new Error('manifests/ renders no Secret');
  await c().kubectlOk(['apply', ...(serverSide ? ['--server-side'] : []), '-f', '-'], {
    input: toYaml(installSecret),
  });
}

function readDir(dir: string): { cert: string; key: string; ca: string } {
  const read = (name: string): string => readFileSync(path.join(dir, name), 'utf8');
  return { cert: read('tls.crt'), key: read('tls.key'), ca: read('ca.crt') };
}

interface Peer {
  fingerprint: string;
  issuer: string;
}

/** One TLS handshake as a webhook client makes it: trusting `ca` only, checking the Service name. */
function handshake(port: number, ca: string): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername: SERVER_NAME, ca, minVersion: 'TLSv1.2' }, () => {
      const peer = socket.getPeerX509Certificate();
      socket.end();
      if (!socket.authorized || peer === undefined)
        reject(new Error(`not authorized: ${String(socket.authorizationError)}`));
      else resolve({ fingerprint: peer.fingerprint256, issuer: peer.issuer });
    });
    socket.setTimeout(5000, () => socket.destroy(new Error('handshake timed out')));
    socket.on('error', reject);
  });
}

interface LoopStats {
  ok: number;
  failures: string[];
  fingerprints: Set<string>;
  issuers: Set<string>;
}

/** Handshakes back to back against every server until stopped; `trust` gives the CA bundle for each one. */
function handshakeLoop(trust: () => Promise<string>): { stats: LoopStats; stop(): Promise<LoopStats> } {
  const stats: LoopStats = { ok: 0, failures: [], fingerprints: new Set(), issuers: new Set() };
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      for (const s of servers) {
        try {
          const peer = await handshake(s.port, await trust());
          stats.ok += 1;
          stats.fingerprints.add(peer.fingerprint);
          stats.issuers.add(peer.issuer);
        } catch (error) {
          stats.failures.push(error instanceof Error ? error.message : String(error));
        }
      }
      await sleep(5);
    }
  })();
  return {
    stats,
    async stop() {
      stopped = true;
      await running;
      return stats;
    },
  };
}

let podCount = 0;
/** Creates a Sandbox-labelled pod: kube-apiserver must call the webhook over TLS, and fails closed. */
async function createPodThroughWebhook(): Promise<void> {
  podCount += 1;
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `p${podCount}`, namespace: POD_NS, labels: { 'agents.kruise.io/created-by': 'sandbox' } },
    spec: { containers: [{ name: 'main', image: 'busybox:1.36' }] },
  };
  const before = server(0).admissionRequests;
  await c().kubectlOk(['create', '-f', '-'], { input: toYaml(pod) });
  // Both webhook entries call server 0.
  expect(server(0).admissionRequests - before).toBe(2);
}

beforeAll(async () => {
  cluster = await startCluster();
  admin = createKubeClients(c().kubeconfigPath);
  workDir = mkdtempSync(path.join(tmpdir(), 'self-managed-certs-'));
  const compiling = compileReplica();

  // The namespace, service account and RBAC exactly as manifests/ install them.
  const rendered = parseAllDocuments(await c().kubectlOk(['kustomize', path.join(repoRoot, 'manifests')])).map(
    (d) => d.toJS() as { kind: string },
  );
  installSecret = rendered.find((o) => o.kind === 'Secret');
  const wanted = new Set(['Namespace', 'ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding']);
  // A stand-in of upstream's namespace: the Role that reads the injection ConfigMap goes there.
  await c().ensureNamespace('sandbox-system');
  await c().kubectlOk(['apply', '--server-side', '-f', '-'], {
    input: rendered
      .filter((o) => wanted.has(o.kind))
      .map((o) => toYaml(o))
      .join('---\n'),
  });
  await c().ensureNamespace(POD_NS);

  // A token for the service account, so the replicas act with its rights and no more.
  const token = (await c().kubectlOk(['create', 'token', 'sandbox-injector', '-n', NS, '--duration=2h'])).trim();
  saKubeconfig = path.join(workDir, 'sa.kubeconfig');
  writeFileSync(
    saKubeconfig,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'e2e',
          cluster: { server: c().server, 'certificate-authority-data': Buffer.from(c().caPem).toString('base64') },
        },
      ],
      users: [{ name: 'sandbox-injector', user: { token } }],
      contexts: [{ name: 'sa', context: { cluster: 'e2e', user: 'sandbox-injector' } }],
      'current-context': 'sa',
    }),
    { mode: 0o600 },
  );

  // The webhook configuration exists before the replicas start, as after `kubectl apply -k`, with two
  // entries so that "every entry" is checked. Its URL is set once the HTTPS server has a port.
  const webhook = (name: string): object => ({
    name,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    failurePolicy: 'Fail',
    timeoutSeconds: 5,
    clientConfig: { url: 'https://127.0.0.1:1/mutate' },
    rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
    objectSelector: { matchLabels: { 'agents.kruise.io/created-by': 'sandbox' } },
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': POD_NS } },
  });
  await c().kubectlOk(['apply', '-f', '-'], {
    input: toYaml({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: MWC },
      webhooks: [webhook('first.e2e.agents.kruise.io'), webhook('second.e2e.agents.kruise.io')],
    }),
  });
  compiled = await compiling;
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await Promise.all(replicas.map((r) => r.stop()));
  compiled?.remove();
  await cluster?.stop();
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
});

describe('self-managed certificates with two replicas', () => {
  it('a replica whose Secret is absent says so, creates none, and is not ready', async () => {
    const lonely = startReplica(compiled?.mainJs ?? '', 'absent', {
      kubeconfig: saKubeconfig,
      dir: path.join(workDir, 'certs-absent'),
      namespace: NS,
      secretName: SECRET,
      serviceName: 'sandbox-injector',
      webhookConfigName: MWC,
      extraSans: [],
      pollIntervalMs: 300,
      retryMinMs: 100,
      caOverlapMs: CA_OVERLAP_MS,
    });
    let ready = false;
    // It rejects once the replica is stopped below, never having been ready.
    void lonely.ready.then(
      () => (ready = true),
      () => undefined,
    );
    try {
      const failed = (): ReplicaLog | undefined =>
        lonely.logs.find((l) => l.msg === 'self-managed certificates: pass failed');
      await waitFor('the replica to report the missing Secret', () => failed() !== undefined);
      expect(JSON.stringify(failed()?.fields)).toContain(
        `Secret ${NS}/${SECRET} does not exist: self-managed certificates fill the Secret the install makes`,
      );
      const secrets = await api().clients.core.listNamespacedSecret({ namespace: NS });
      expect(secrets.items).toEqual([]);
      expect(ready).toBe(false);
    } finally {
      await lonely.stop();
    }
  });

  it('two replicas started together fill the empty Secret once, and write files that match it', async () => {
    // What `kubectl apply -k manifests/` makes: an Opaque Secret without data.
    await applyInstallSecret();
    expect((await secret()).data).toBeUndefined();
    const mainJs = compiled?.mainJs ?? '';
    for (const name of ['a', 'b']) {
      replicas.push(
        startReplica(mainJs, name, {
          kubeconfig: saKubeconfig,
          dir: path.join(workDir, `certs-${name}`, randomBytes(3).toString('hex')),
          namespace: NS,
          secretName: SECRET,
          serviceName: 'sandbox-injector',
          webhookConfigName: MWC,
          extraSans: ['127.0.0.1'],
          pollIntervalMs: 300,
          retryMinMs: 100,
          caOverlapMs: CA_OVERLAP_MS,
        }),
      );
    }
    await Promise.all(replicas.map((r) => r.ready));

    const secrets = await api().clients.core.listNamespacedSecret({ namespace: NS });
    expect(secrets.items.map((s) => s.metadata?.name)).toEqual([SECRET]);
    const stored = await secret();
    expect(stored.type).toBe('Opaque');
    expect(Object.keys(stored.data ?? {}).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);

    // Whoever lost the race (409 on update) adopted the winner's Secret: exactly one fill succeeded.
    const filled = replicas.flatMap((r) => r.logs.filter((l) => l.msg === 'certificate Secret filled'));
    expect(filled, replicas.map((r) => r.describeLogs()).join('\n')).toHaveLength(1);

    for (const r of replicas) {
      expect(lstatSync(path.join(r.dir, 'tls.crt')).isSymbolicLink()).toBe(true);
      expect(readDir(r.dir)).toEqual({
        cert: await secretText('tls.crt'),
        key: await secretText('tls.key'),
        ca: await secretText('ca.crt'),
      });
    }
  });

  it('puts the CA in the caBundle of every webhook entry, and the caBundle verifies the served certificate', async () => {
    const caPem = (await secretText('ca.crt')) ?? '';
    const bundles = await caBundles();
    expect(bundles).toHaveLength(2);
    for (const bundle of bundles) expect(pems(bundle)).toEqual([caPem]);

    const served = new X509Certificate((await secretText('tls.crt')) ?? '');
    const ca = new X509Certificate(caPem);
    expect(served.verify(ca.publicKey)).toBe(true);
    expect(served.checkIssued(ca)).toBe(true);
    for (const name of [
      'sandbox-injector',
      'sandbox-injector.sandbox-injector-system',
      SERVER_NAME,
      'sandbox-injector.sandbox-injector-system.svc.cluster.local',
    ]) {
      expect(served.checkHost(name), name).toBe(name);
    }
    expect(served.checkIP('127.0.0.1')).toBe('127.0.0.1');

    for (const r of replicas)
      servers.push(
        await startTlsFileServer({ certFile: path.join(r.dir, 'tls.crt'), keyFile: path.join(r.dir, 'tls.key') }),
      );
    const bundle = bundles[0] ?? '';
    for (const s of servers) {
      const peer = await handshake(s.port, bundle);
      expect(peer.fingerprint).toBe(served.fingerprint256);
    }
  });

  it('is trusted by kube-apiserver: a pod is admitted through the webhook (failurePolicy Fail)', async () => {
    const port = server(0).port;
    await c().kubectlOk([
      'patch',
      'mutatingwebhookconfiguration',
      MWC,
      '--type=json',
      '-p',
      JSON.stringify(
        [0, 1].map((i) => ({
          op: 'replace',
          path: `/webhooks/${i}/clientConfig/url`,
          value: `https://127.0.0.1:${port}/mutate`,
        })),
      ),
    ]);
    // Patching the URL keeps the caBundle, which the replicas own.
    expect((await caBundles()).every((b) => pems(b).length === 1)).toBe(true);
    // The API server picks webhook configuration changes up asynchronously.
    await waitFor('the API server to call the webhook', async () => {
      try {
        await createPodThroughWebhook();
        return true;
      } catch {
        return false;
      }
    });
    await createPodThroughWebhook();
  });

  it('renews and rotates the CA with zero failed handshakes', async () => {
    const caBundleNow = async (): Promise<string> => (await caBundles())[0] ?? '';
    const servedBy = (fingerprint: string): boolean => servers.every((s) => s.servingFingerprint() === fingerprint);
    // Trust read from the webhook configuration before every handshake, and trust read once at the start.
    const perConnection = handshakeLoop(caBundleNow);
    const startBundle = await caBundleNow();
    const fromStart = handshakeLoop(() => Promise.resolve(startBundle));
    await sleep(300);

    // 1. A serving certificate renewal: same CA, so the caBundle is left alone (not even rewritten).
    const ca1 = (await secretText('ca.crt')) ?? '';
    const first = fingerprintOf((await secretText('tls.crt')) ?? '');
    const configVersion = (await webhookConfig()).metadata?.resourceVersion;
    await replica(0).renew();
    const renewed = fingerprintOf((await secretText('tls.crt')) ?? '');
    expect(renewed).not.toBe(first);
    await waitFor('both servers to serve the renewed certificate', () => servedBy(renewed));
    expect((await webhookConfig()).metadata?.resourceVersion).toBe(configVersion);
    await sleep(300);

    // 2. CA rotation, staged: the new CA joins every caBundle while the old one still signs.
    await replica(1).renew(true);
    const ca2 = (await secretText('next-ca.crt')) ?? '';
    expect(ca2).toContain('BEGIN CERTIFICATE');
    expect(await secretText('ca.crt')).toBe(ca1);
    for (const bundle of await caBundles()) expect(pems(bundle)).toEqual([ca1, ca2]);
    const stagedServing = fingerprintOf((await secretText('tls.crt')) ?? '');
    expect(new X509Certificate((await secretText('tls.crt')) ?? '').checkIssued(new X509Certificate(ca1))).toBe(true);
    await waitFor('both servers to serve the certificate issued with the staging', () => servedBy(stagedServing));
    // A client that takes its trust from the configuration during the rotation holds both CAs.
    const duringRotationBundle = await caBundleNow();
    const duringRotation = handshakeLoop(() => Promise.resolve(duringRotationBundle));
    await createPodThroughWebhook();
    await sleep(300);
    // Trust taken before the rotation started can only ever accept the old CA: it stops here, before the
    // new CA signs anything.
    const beforeRotation = await fromStart.stop();

    // 3. Promotion: once the overlap has passed (the replicas' clocks jump past it), the new CA signs.
    await Promise.all(replicas.map((r) => r.setClockOffset(CA_OVERLAP_MS + 1000)));
    await waitFor('the Secret to be signed by the new CA', async () => (await secretText('ca.crt')) === ca2);
    const promotedServing = fingerprintOf((await secretText('tls.crt')) ?? '');
    await waitFor('both servers to serve the certificate of the new CA', () => servedBy(promotedServing));
    expect(await secretText('previous-ca.crt')).toBe(ca1);
    expect(await secretText('next-ca.crt')).toBeUndefined();
    for (const bundle of await caBundles()) expect(pems(bundle)).toEqual([ca1, ca2]);
    await createPodThroughWebhook();
    await sleep(500);

    const [live, rotating] = await Promise.all([perConnection.stop(), duringRotation.stop()]);
    for (const [name, stats] of [
      ['per connection', live],
      ['from the start', beforeRotation],
      ['from during the rotation', rotating],
    ] as const) {
      expect(stats.failures, `${name}: ${stats.failures.slice(0, 3).join('; ')}`).toEqual([]);
      expect(stats.ok, name).toBeGreaterThan(10);
    }
    // The per-connection client met all three certificates, signed by both CAs.
    expect([...live.fingerprints]).toEqual(expect.arrayContaining([first, renewed, promotedServing]));
    expect(live.issuers.size).toBe(2);
    expect([...rotating.fingerprints]).toContain(promotedServing);

    // Every reload went through; both directories hold exactly what the Secret holds.
    for (const s of servers) expect(s.reloads.filter((r) => r.kind === 'failed')).toEqual([]);
    for (const r of replicas) {
      expect(readDir(r.dir)).toEqual({
        cert: await secretText('tls.crt'),
        key: await secretText('tls.key'),
        ca: await secretText('ca.crt'),
      });
    }
  });

  it('repairs a caBundle that was overwritten (the configuration re-applied by hand)', async () => {
    const expected = await caBundles();
    const foreign = Buffer.from(c().caPem).toString('base64');
    await c().kubectlOk([
      'patch',
      'mutatingwebhookconfiguration',
      MWC,
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'replace', path: '/webhooks/1/clientConfig/caBundle', value: foreign }]),
    ]);
    await waitFor(
      'a replica to restore the caBundle on its next poll',
      async () => JSON.stringify(await caBundles()) === JSON.stringify(expected),
    );
    await waitFor('the API server to call the webhook again', async () => {
      try {
        await createPodThroughWebhook();
        return true;
      } catch {
        return false;
      }
    });
  });

  it("re-applying the install's Secret, client-side or server-side, leaves what the replicas wrote", async () => {
    const before = await secret();
    expect(Object.keys(before.data ?? {})).toContain('tls.crt');
    await applyInstallSecret();
    expect((await secret()).data).toEqual(before.data);
    // Server-side apply: the manager of `data` is the replicas' update, which the applied object does not name,
    // so there is no conflict and nothing to force.
    await applyInstallSecret(true);
    expect((await secret()).data).toEqual(before.data);
    await applyInstallSecret();
    expect((await secret()).data).toEqual(before.data);
    expect((await secret()).metadata?.annotations?.['sandbox-injector.agents.kruise.io/generation']).toBe(
      before.metadata?.annotations?.['sandbox-injector.agents.kruise.io/generation'],
    );
  });

  it('why the Secret is Opaque without data: a kubernetes.io/tls one needs the keys, and a re-apply empties them', async () => {
    const tls = (data?: Record<string, string>): string =>
      toYaml({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'scratch-tls', namespace: NS },
        type: 'kubernetes.io/tls',
        ...(data === undefined ? {} : { data }),
      });
    const bare = await c().kubectl(['apply', '-f', '-'], { input: tls() });
    expect(bare.code).not.toBe(0);
    expect(bare.stderr).toContain('data[tls.crt]: Required value');
    await c().kubectlOk(['apply', '-f', '-'], { input: tls({ 'tls.crt': '', 'tls.key': '' }) });
    const filled = Buffer.from('filled').toString('base64');
    await c().kubectlOk([
      '-n',
      NS,
      'patch',
      'secret',
      'scratch-tls',
      '--type=merge',
      '-p',
      JSON.stringify({ data: { 'tls.crt': filled, 'tls.key': filled } }),
    ]);
    await c().kubectlOk(['apply', '-f', '-'], { input: tls({ 'tls.crt': '', 'tls.key': '' }) });
    const after = JSON.parse(await c().kubectlOk(['-n', NS, 'get', 'secret', 'scratch-tls', '-o', 'json'])) as V1Secret;
    expect(after.data).toEqual({ 'tls.crt': '', 'tls.key': '' });
    await c().kubectlOk(['-n', NS, 'delete', 'secret', 'scratch-tls']);
  });

  it('stops cleanly', async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    for (const r of replicas)
      expect(
        r.logs.filter((l) => l.level === 'error'),
        r.describeLogs(),
      ).toEqual([]);
  });
});
