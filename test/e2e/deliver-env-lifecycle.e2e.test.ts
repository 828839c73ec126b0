// deliver-env on a real kube-apiserver, for the steps of a Sandbox's life beyond the first claim that decide
// which pod gets a tenant's variables (docs/deliver-env.md, "A Sandbox's life"): a runtime URL that names another
// host, a runtime that serves TLS (without a bundle, then with mTLS), and a leader frozen past its Lease.
// envd is a loopback double that follows envd's published file API (test/support/envd-double.ts); it is not
// the real envd. The controllers run as the component's service account, with its RBAC and nothing more.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeTlsPki, runtimeTlsSecretData } from '../support/runtime-tls-pki.js';
import { repoRoot, type TestCluster } from './support/cluster.js';
import { metricsText, startDeliverProcess, type DeliverProcess } from './support/deliver-process.js';
import {
  controllerArgs,
  deliverCluster,
  deliverWorld,
  FIRST_DELIVERY,
  firstDeliveryIn,
  RUNTIME_URL,
  claimShapes,
  until,
} from './support/deliver-world.js';

const NS = 'e2e-deliver-life';
const LEASE_NS = 'sandbox-injector-system';
const TOKEN = 'tok-life-1';
const TLS_SECRET = 'sandbox-runtime-tls';
const TLS_COMPONENT = path.join(repoRoot, 'manifests', 'components', 'deliver-env-runtime-tls');

let cluster: TestCluster;
let leader: DeliverProcess;
let kubeconfig: string;
const world = deliverWorld(() => cluster, NS);

/** The sum of a counter's series in a metrics text. */
function counterSum(text: string, name: string): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

describe('deliver-env through the lifecycle, on a real kube-apiserver', () => {
  let plain: Awaited<ReturnType<typeof world.envd>>;
  const args = (): string[] => [
    ...controllerArgs(plain.double.port, LEASE_NS),
    '--runtime-tls-secret',
    `${LEASE_NS}/${TLS_SECRET}`,
    // Plain and TLS runtimes side by side: the bundle alone would refuse the plain ones (RuntimeTlsRequired).
    '--no-require-runtime-tls',
  ];

  beforeAll(async () => {
    ({ cluster, kubeconfigPath: kubeconfig } = await deliverCluster(NS, LEASE_NS, [
      path.join(TLS_COMPONENT, 'rbac.yaml'),
    ]));
    plain = await world.envd({ token: TOKEN });
    // The TLS Secret does not exist yet: ready all the same (a missing Secret is a state, not a failure).
    leader = await startDeliverProcess(cluster, 'life-a', args(), kubeconfig);
  });

  afterAll(async () => {
    await leader?.stop();
    await world.close();
    await cluster?.stop();
  });

  it("refuses a runtime URL whose host is not the pod's IP, and sends nothing there", async () => {
    const elsewhere = await world.envd({ host: '127.0.0.5' });
    await world.createSandbox({ name: 'sbx-url', annotations: { [RUNTIME_URL]: elsewhere.double.url } });
    await world.claim('sbx-url', { API_KEY: 'sk-life-secret-url' }, TOKEN);
    const refused = await world.event('sbx-url', 'RuntimeUrlRefused');
    expect(refused.type).toBe('Warning');
    expect(refused.message).toMatch(/not the pod's IP \(127\.0\.0\.1\)/);
    expect(refused.message).not.toMatch(/sk-life-secret-url|tok-life-1/);
    expect(elsewhere.double.requests).toEqual([]);
    // Nor to the pod's own address: the URL names where envd is, and it is not followed.
    expect(plain.double.requests).toEqual([]);
  });

  it('a TLS runtime without a bundle gets a Warning and nothing in clear; with the Secret, mTLS delivers', async () => {
    const pki = runtimeTlsPki();
    const tls = await world.envd({
      token: TOKEN,
      tls: { key: pki.server.keyPem, cert: pki.server.certPem, ca: pki.ca.certPem, requestClientCert: true },
    });
    await world.createSandbox({
      name: 'sbx-tls',
      annotations: { 'agents.kruise.io/runtime-tls-port': String(tls.double.port) },
    });
    await world.claim('sbx-tls', { API_KEY: 'sk-life-secret-tls' }, TOKEN);
    const unconfigured = await world.event('sbx-tls', 'RuntimeTlsUnconfigured');
    expect(unconfigured.type).toBe('Warning');
    expect(unconfigured.message).toMatch(/nothing is sent in clear/);
    expect(tls.double.requests).toEqual([]);
    expect(tls.double.handshakeFailures).toBe(0);
    expect(plain.double.requests).toEqual([]);

    // The Secret appears: every Sandbox is looked at again, and this one is delivered over mTLS.
    await cluster.applyObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: TLS_SECRET, namespace: LEASE_NS },
      data: runtimeTlsSecretData(pki.ca.certPem, pki.client),
    });
    await until('delivered over mTLS', () => firstDeliveryIn(tls.double));
    expect(claimShapes(tls.double)).toEqual(FIRST_DELIVERY);
    expect(tls.double.requests.every((r) => r.clientCommonName === 'sandbox-injector-deliver-env')).toBe(true);
    expect(tls.double.handshakeFailures).toBe(0);
    expect(plain.double.requests).toEqual([]);
  });

  it('a leader frozen past its Lease sends nothing once thawed; the other replica delivers', async () => {
    const second = await startDeliverProcess(cluster, 'life-b', args(), kubeconfig);
    try {
      await leader.logged((l) => l.msg === 'holding the Lease: delivering', 'life-a leads');
      const before = counterSum(await metricsText(leader.metricsPort()), 'sandbox_injector_envd_requests_total');
      const from = leader.logs.length;
      leader.signal('SIGSTOP');
      const frozen = await world.envd({ token: TOKEN });
      // Claimed while life-a is frozen: its watch sees the claim only once it is thawed.
      await world.createSandbox({ name: 'sbx-frozen', annotations: { [RUNTIME_URL]: frozen.double.url } });
      await world.claim('sbx-frozen', { A: 'frozen-leader' }, TOKEN);
      await second.logged((l) => l.msg === 'holding the Lease: delivering', 'life-b leads', 1, 60_000);
      // The count is taken once the whole first delivery is in, the Move onto .env_ready the last of it.
      await until('delivered by life-b', () => firstDeliveryIn(frozen.double));
      const delivered = frozen.double.requests.length;

      leader.signal('SIGCONT');
      await leader.logged(
        (l, i = leader.logs.indexOf(l)) => i >= from && l.msg === 'following the Lease',
        'life-a follows after its thaw',
      );
      // A Sandbox claimed after the thaw: once life-b has delivered it, life-a has had every chance to send.
      const later = await world.envd({ token: TOKEN });
      await world.createSandbox({ name: 'sbx-thawed', annotations: { [RUNTIME_URL]: later.double.url } });
      await world.claim('sbx-thawed', { A: 'after-thaw' }, TOKEN);
      await until('delivered by life-b again', () => firstDeliveryIn(later.double));
      expect(claimShapes(later.double)).toEqual(FIRST_DELIVERY);
      expect(frozen.double.requests).toHaveLength(delivered);
      expect(claimShapes(frozen.double)).toEqual(FIRST_DELIVERY);
      expect(counterSum(await metricsText(leader.metricsPort()), 'sandbox_injector_envd_requests_total')).toBe(before);
    } finally {
      leader.signal('SIGCONT');
      await second.stop();
    }
  });
});
