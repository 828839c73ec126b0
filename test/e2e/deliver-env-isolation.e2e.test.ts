// Tenant isolation on a real kube-apiserver: each test plays an attacker (or an accident) that would make
// deliver-env send one tenant's claim to a pod that is not the claim's, and checks that nothing reaches it. The
// envds are loopback doubles of envd's published file API (test/support/envd-double.ts; not the real envd);
// a token-less double takes any request, as a pool pod's envd does before its first claim. deliver-env runs as
// the service account of manifests/components/deliver-env, without the ownership policy installed: identity by
// status.podInfo.podUID is the wall these tests hold up on their own.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnvdDouble } from '../support/envd-double.js';
import type { TestCluster } from './support/cluster.js';
import { startDeliverProcess, type DeliverProcess } from './support/deliver-process.js';
import { controllerArgs, deliverCluster, deliverWorld, firstDeliveryIn, until } from './support/deliver-world.js';

const NS = 'e2e-isolation';
const LEASE_NS = 'sandbox-injector-system';
const TOKEN = 'tok-isolation';
const STATUS = 'agents.kruise.io/runtime-injection-status';

let cluster: TestCluster;
let kubeconfig: string;
let port: number;
let replicaA: DeliverProcess;
let replicaB: DeliverProcess;
const world = deliverWorld(() => cluster, NS);
const kubectl = (args: string[]) => cluster.kubectlOk(['-n', NS, ...args]);

/** An envd double at `host`, on the port deliver-env dials when it knows only the pod's IP. */
const envdAt = (host: string, token: string | undefined = TOKEN) => world.envd({ host, port, token });

const patchPodStatus = (pod: string, status: Record<string, unknown>) =>
  kubectl(['patch', 'pod', pod, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);

const envSh = (dir: string): string | undefined =>
  existsSync(path.join(dir, 'env.sh')) ? readFileSync(path.join(dir, 'env.sh'), 'utf8') : undefined;

/** The Sandbox's EnvDeliveryHeld Warning whose message starts with `kind`, waited for. */
const held = (sandbox: string, kind: string) =>
  until(`EnvDeliveryHeld (${kind}) on ${sandbox}`, async () =>
    (await world.events(sandbox)).find((e) => e.reason === 'EnvDeliveryHeld' && e.message?.startsWith(`${kind}: `)),
  );

describe('deliver-env: a claim reaches only its own pod', () => {
  let base: EnvdDouble;

  beforeAll(async () => {
    ({ cluster, kubeconfigPath: kubeconfig } = await deliverCluster(NS, LEASE_NS));
    ({ double: base } = await world.envd({ token: TOKEN }));
    port = base.port;
    replicaA = await startDeliverProcess(cluster, 'replica-a', controllerArgs(port, LEASE_NS), kubeconfig);
    await replicaA.logged((l) => l.msg === 'holding the Lease: delivering', 'replica-a leads');
    replicaB = await startDeliverProcess(cluster, 'replica-b', controllerArgs(port, LEASE_NS), kubeconfig);
  }, 180_000);

  afterAll(async () => {
    await replicaA?.stop();
    await replicaB?.stop();
    await world.close();
    await cluster?.stop();
  });

  it('a Failed pod whose IP another pod now serves gets nothing; the new pod the Sandbox names gets the claim', async () => {
    // The evicted pod's address now belongs to another tenant's pool pod, whose envd takes any request.
    const reused = await envdAt('127.0.1.1', undefined);
    const fresh = await envdAt('127.0.1.2');
    const { uid } = await world.createSandbox({ name: 'sbx-failed', podIP: undefined });
    // Evicted: Failed, and Kubernetes keeps its podIP.
    await patchPodStatus('sbx-failed-pod', { phase: 'Failed', reason: 'Evicted', podIP: '127.0.1.1' });
    await world.claim('sbx-failed', { API_KEY: 'sk-isolation-failed' }, TOKEN);
    expect((await held('sbx-failed', 'terminal')).type).toBe('Warning');
    expect(reused.double.requests).toEqual([]);

    // Upstream's controller makes a new pod and names it in the Sandbox's status.
    await world.createPod('sbx-failed', uid, { suffix: '-2', podIP: '127.0.1.2' });
    await until('delivered to the new pod', () => firstDeliveryIn(fresh.double));
    expect(envSh(fresh.dir)).toContain('sk-isolation-failed');
    expect(reused.double.requests).toEqual([]);
  });

  it("a pod patched to claim another tenant's Sandbox gets nothing, and the Sandbox's own pod gets the claim once it is gone", async () => {
    const own = await envdAt('127.0.2.1');
    const strangers = await envdAt('127.0.2.2', undefined);
    const { uid } = await world.createSandbox({ name: 'sbx-victim', podIP: '127.0.2.1' });
    await world.claim('sbx-victim', { API_KEY: 'sk-isolation-first' }, TOKEN);
    await until('the first claim delivered', () => firstDeliveryIn(own.double));

    // A namespace member makes a plain pod, then writes into it the label, a controller owner reference to the
    // Sandbox (its name and UID are readable) and a status annotation that says `main` waits for a claim.
    await cluster.applyObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'intruder', namespace: NS },
      spec: { containers: [{ name: 'main', image: 'app:1' }] },
    });
    const ownership = {
      metadata: {
        labels: { 'agents.kruise.io/created-by': 'sandbox' },
        annotations: { [STATUS]: JSON.stringify({ injected: [], present: [], skipped: [], wrapped: ['main'] }) },
        ownerReferences: [
          { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: 'sbx-victim', uid, controller: true },
        ],
      },
    };
    await kubectl(['patch', 'pod', 'intruder', '--type=merge', '-p', JSON.stringify(ownership)]);
    await patchPodStatus('intruder', { phase: 'Running', podIP: '127.0.2.2', podIPs: [{ ip: '127.0.2.2' }] });

    // The next claim of the Sandbox (another tenant's): two live pods claim it, so neither gets anything.
    const before = own.double.requests.length;
    await world.claim('sbx-victim', { API_KEY: 'sk-isolation-second' }, TOKEN);
    const warning = await held('sbx-victim', 'ambiguous');
    expect(warning.message).toContain('upstream makes one');
    expect(strangers.double.requests).toEqual([]);
    expect(own.double.requests.slice(before)).toEqual([]);

    await kubectl(['delete', 'pod', 'intruder', '--grace-period=0', '--force', '--wait=true']);
    await until('the second claim delivered to the own pod', () =>
      envSh(own.dir)?.includes('sk-isolation-second') === true ? true : undefined,
    );
    expect(strangers.double.requests).toEqual([]);
  });

  it('a podUID that names no pod: nothing sent, and a Warning once it lasts', async () => {
    const double = await envdAt('127.0.3.1');
    await world.createSandbox({ name: 'sbx-nouid', podIP: '127.0.3.1', podInfo: { podUID: 'no-such-pod' } });
    await world.claim('sbx-nouid', { API_KEY: 'sk-isolation-nouid' }, TOKEN);
    const warning = await held('sbx-nouid', 'pod-gone');
    expect(warning.message).toContain('no-such-pod');
    expect(double.double.requests).toEqual([]);
  });

  /** The recycled pod's envd, which the next test claims again. */
  let recycled: Awaited<ReturnType<typeof envdAt>>;

  it("recycle after the leader is killed: the next leader clears the pod with the claim's token", async () => {
    const double = await envdAt('127.0.4.1');
    recycled = double;
    await world.createSandbox({ name: 'sbx-recycle', podIP: '127.0.4.1' });
    await world.setRunning('sbx-recycle-pod', 'main', 'containerd://served-1');
    await world.claim('sbx-recycle', { API_KEY: 'sk-isolation-recycle' }, TOKEN);
    await until('delivered', () => firstDeliveryIn(double.double));
    // replica-b has watched the Sandbox from before the claim, so it saw the claimed version.
    replicaA.signal('SIGKILL');
    // Recycle, as upstream's resetMetadataForPool: the label back to false, the claim's annotations gone.
    await kubectl(['label', '--overwrite', 'sandbox', 'sbx-recycle', 'agents.kruise.io/sandbox-claimed=false']);
    await kubectl([
      'annotate',
      'sandbox',
      'sbx-recycle',
      'agents.kruise.io/init-runtime-request-',
      'agents.kruise.io/claim-timestamp-',
    ]);
    await replicaB.logged((l) => l.msg === 'holding the Lease: delivering', 'replica-b leads', 1, 60_000);
    await until('cleared by replica-b', () =>
      existsSync(path.join(double.dir, '.env_ready')) || existsSync(path.join(double.dir, 'env.sh')) ? undefined : true,
    );
    const removes = double.double.requests.filter((r) => r.operation === 'remove');
    expect(removes.map((r) => `${r.path} ${r.status}`)).toEqual([
      '/var/sandbox/.env_ready 200',
      '/var/sandbox/env.sh 200',
    ]);
    expect((await world.event('sbx-recycle', 'EnvCleared')).type).toBe('Normal');
    // The mark names the instance that served the claim, as the kubelet reported it.
    expect(readFileSync(path.join(double.dir, '.env_recycled'), 'utf8')).toContain(
      'container main containerd://served-1\n',
    );
  });

  it("the next tenant's claim into the recycled pod waits until its container has restarted, then goes in", async () => {
    const double = recycled;
    const from = double.double.requests.length;
    await world.claim('sbx-recycle', { API_KEY: 'sk-isolation-next-tenant' }, TOKEN);
    // The listing finds the mark, the mark is read: the instance that served the last claim still runs.
    await until('the mark read', () =>
      double.double.requests
        .slice(from)
        .some((r) => r.operation === 'get' && r.path?.endsWith('.env_recycled') === true)
        ? true
        : undefined,
    );
    expect(envSh(double.dir)).toBeUndefined();
    // The wrapper ended the last claim's app; the kubelet restarted the container: another instance runs.
    await world.setRunning('sbx-recycle-pod', 'main', 'containerd://restarted-2');
    await until("the next tenant's env", () =>
      envSh(double.dir)?.includes('sk-isolation-next-tenant') === true ? true : undefined,
    );
    expect(existsSync(path.join(double.dir, '.env_recycled'))).toBe(false);
    expect(envSh(double.dir)).not.toContain('sk-isolation-recycle');
  });

  it('--require-runtime-tls: a runtime without a TLS port gets nothing in clear, and a Warning', async () => {
    await replicaB.stop();
    const strict = await startDeliverProcess(
      cluster,
      'replica-strict',
      [...controllerArgs(port, LEASE_NS), '--require-runtime-tls'],
      kubeconfig,
    );
    try {
      const double = await envdAt('127.0.5.1');
      await world.createSandbox({ name: 'sbx-clear', podIP: '127.0.5.1' });
      await world.claim('sbx-clear', { API_KEY: 'sk-isolation-clear' }, TOKEN);
      const refused = await world.event('sbx-clear', 'RuntimeTlsRequired');
      expect(refused.type).toBe('Warning');
      expect(refused.message).toContain('--require-runtime-tls');
      expect(double.double.requests).toEqual([]);
    } finally {
      await strict.stop();
    }
  });
});
