// Pool pods on a real kube-apiserver: deliver-env (as the service account of manifests/components/deliver-env,
// with the RBAC of deliver-env-pool-replacement) judges unclaimed Sandbox pods missing or stale against the
// injection ConfigMap, reports them, and replaces them within its bounds; the webhook is the real one, as its
// own process, behind a MutatingWebhookConfiguration with failurePolicy Ignore.
//
// The pools' controller is played by a small loop in this file (StandInPools): for each unclaimed Sandbox of a
// pool whose pod is gone, it creates a new pod through the API server (so the webhook admits it), marks it
// running, names it in the Sandbox's status.podInfo.podUID, and marks it Ready a moment later, as a kubelet
// would. It recreates pods under the same Sandbox (upstream's SandboxSet makes a new Sandbox instead:
// deliver-env takes the first new pod of the pool either way). A watch of the namespace's pods checks the
// bounds as they happen: how many pods of each pool, and of all, are not Ready at any moment.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  Watch,
  type KubernetesListObject,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { readFileSync } from 'node:fs';
import { repoRoot, type TestCluster } from './support/cluster.js';
import { metricsText, startDeliverProcess, type DeliverProcess } from './support/deliver-process.js';
import {
  CONFIG_NAMESPACE,
  controllerArgs,
  deliverCluster,
  deliverWorld,
  until,
  type EventItem,
} from './support/deliver-world.js';
import { startWebhookProcess, webhookConfiguration, type WebhookProcess } from './support/webhook-process.js';
import { untilWebhookCalled } from './support/readiness.js';

const NS = 'e2e-pool-pods';
const LEASE_NS = 'sandbox-injector-system';
const STATUS = 'agents.kruise.io/runtime-injection-status';
const POOL_LABEL = 'e2e-pool';
const CLI = path.join(repoRoot, 'dist', 'cli', 'main.js');
const REPLACEMENT_RBAC = path.join(repoRoot, 'manifests', 'components', 'deliver-env-pool-replacement', 'rbac.yaml');
const SANDBOXSET_CRD = path.join(repoRoot, 'test', 'fixtures', 'e2e', 'sandboxset-crd.yaml');
const CONFIGMAP = path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml');
/** The bounds deliver-env runs with here: N across the cluster, M per pool. */
const N = 2;
const M = 1;
const REPLACING = [
  '--replace-pool-pods=missing,stale',
  `--replace-max-at-once=${N}`,
  `--replace-max-per-pool=${M}`,
  '--replace-ready-timeout=30s',
];
/** How long after its creation the stand-in marks a pod Ready: room for the bounds to be seen at work. */
const READY_AFTER_MS = 1000;

type Json = Record<string, unknown>;
interface SandboxObject {
  metadata: { name: string; uid: string; labels?: Record<string, string> };
  status?: { podInfo?: { podUID?: string } };
}

let cluster: TestCluster;
let kubeconfig: string;
let webhook: WebhookProcess;
let deliver: DeliverProcess | undefined;
let pools: StandInPools;
let config: Record<string, string>;
const world = deliverWorld(() => cluster, NS);
const kubectl = (args: string[]) => cluster.kubectlOk(['-n', NS, ...args]);

/**
 * The pools' controller: keeps each unclaimed Sandbox of a pool with a pod of its own, recreating it when it is
 * deleted. Every pod it creates goes through the API server's admission, the webhook included.
 */
class StandInPools {
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private readonly pending = new Set<Promise<void>>();
  readonly errors: string[] = [];

  constructor(kubeconfigPath: string) {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    this.core = kc.makeApiClient(CoreV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.tick().catch((error: unknown) => this.errors.push(String(error)));
        await sleep(100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await Promise.all([...this.pending]);
  }

  private async tick(): Promise<void> {
    const sandboxes = (
      (await this.custom.listNamespacedCustomObject({
        group: 'agents.kruise.io',
        version: 'v1alpha1',
        namespace: NS,
        plural: 'sandboxes',
        labelSelector: POOL_LABEL,
      })) as KubernetesListObject<SandboxObject>
    ).items;
    const pods = (await this.core.listNamespacedPod({ namespace: NS })).items;
    const alive = new Set(pods.filter((p) => p.metadata?.deletionTimestamp === undefined).map((p) => p.metadata?.uid));
    for (const sandbox of sandboxes) {
      if (sandbox.metadata.labels?.['agents.kruise.io/sandbox-claimed'] === 'true') continue;
      const named = sandbox.status?.podInfo?.podUID;
      if (named !== undefined && alive.has(named)) continue;
      await this.createPod(sandbox);
    }
  }

  private async createPod(sandbox: SandboxObject): Promise<void> {
    const { name, uid } = sandbox.metadata;
    const pool = sandbox.metadata.labels?.[POOL_LABEL] ?? '';
    const made = await this.core.createNamespacedPod({
      namespace: NS,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        // Named after its Sandbox, as upstream names it: an unscheduled pod is gone at once when deleted.
        metadata: {
          name,
          namespace: NS,
          labels: { 'agents.kruise.io/created-by': 'sandbox', [POOL_LABEL]: pool },
          annotations: { 'agents.kruise.io/created-by': 'sandbox' },
          ownerReferences: [{ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name, uid, controller: true }],
        },
        spec: {
          automountServiceAccountToken: false,
          containers: [{ name: 'main', image: 'app:1', command: ['run'] }],
        },
      },
    });
    const podName = made.metadata?.name ?? '';
    const podUid = made.metadata?.uid ?? '';
    await this.podStatus(podName, false);
    await this.custom.patchNamespacedCustomObjectStatus({
      group: 'agents.kruise.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'sandboxes',
      name,
      body: [{ op: 'add', path: '/status', value: { podInfo: { podUID: podUid, podIP: '127.0.0.1' } } }],
    });
    // As a kubelet would, a moment later: the pod passes its readiness probe.
    const ready = sleep(READY_AFTER_MS)
      .then(() => (this.stopped ? undefined : this.podStatus(podName, true)))
      .catch((error: unknown) => void this.errors.push(`ready ${podName}: ${String(error)}`));
    this.pending.add(ready);
    void ready.finally(() => this.pending.delete(ready));
  }

  private async podStatus(name: string, ready: boolean): Promise<void> {
    const status = {
      phase: 'Running',
      podIP: '127.0.0.1',
      podIPs: [{ ip: '127.0.0.1' }],
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    };
    try {
      await this.core.patchNamespacedPodStatus({
        name,
        namespace: NS,
        body: [{ op: 'add', path: '/status', value: status }],
      });
    } catch (error) {
      // A pod deleted before it was Ready has no status to set.
      if ((error as { code?: unknown }).code !== 404) throw error;
    }
  }
}

/** Every moment's count of pool pods not Ready (gone, or not yet Ready), per pool and in all, from a pod watch. */
class BoundsWatch {
  private readonly pods = new Map<string, { pool: string; sandbox: string; ready: boolean }>();
  private abort: (() => void) | undefined;
  /** The pool's unclaimed Sandboxes: each should have one Ready pod. */
  readonly sizes = new Map<string, number>();
  readonly claimed = new Set<string>();
  maxPerPool = 0;
  maxInAll = 0;
  readonly deleted: { pool: string; sandbox: string; uid: string }[] = [];

  async start(kubeconfigPath: string): Promise<void> {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const request = await new Watch(kc).watch(
      `/api/v1/namespaces/${NS}/pods`,
      {},
      (type: string, pod: V1Pod) => this.seen(type, pod),
      () => undefined,
    );
    this.abort = () => request.abort();
  }

  stop(): void {
    this.abort?.();
  }

  /** Starts counting afresh. */
  reset(): void {
    this.maxPerPool = 0;
    this.maxInAll = 0;
  }

  /** Pool pods not Ready now, in all. */
  notReadyNow(): number {
    let inAll = 0;
    for (const [name, size] of this.sizes) inAll += this.missingIn(name, size);
    return inAll;
  }

  private missingIn(pool: string, size: number): number {
    const ready = [...this.pods.values()].filter((p) => p.pool === pool && p.ready && !this.claimed.has(p.sandbox));
    return Math.max(0, size - ready.length);
  }

  private seen(type: string, pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const pool = pod.metadata?.labels?.[POOL_LABEL];
    const sandbox = pod.metadata?.ownerReferences?.[0]?.name ?? '';
    if (pool === undefined) return;
    if (type === 'DELETED') {
      this.pods.delete(uid);
      this.deleted.push({ pool, sandbox, uid });
    } else {
      const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
      this.pods.set(uid, { pool, sandbox, ready: ready && pod.metadata?.deletionTimestamp === undefined });
    }
    let inAll = 0;
    for (const [name, size] of this.sizes) {
      const missing = this.missingIn(name, size);
      this.maxPerPool = Math.max(this.maxPerPool, missing);
      inAll += missing;
    }
    this.maxInAll = Math.max(this.maxInAll, inAll);
  }
}

let bounds: BoundsWatch;

/** A SandboxSet and `size` Sandboxes it owns, as upstream's controller keeps them in its pool. */
async function createPool(name: string, size: number, runtimes: string[]): Promise<string[]> {
  const set = JSON.parse(
    await cluster.kubectlOk(['-n', NS, 'create', '-o', 'json', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'SandboxSet',
        metadata: { name, namespace: NS },
        spec: { replicas: size, runtimes: runtimes.map((r) => ({ name: r })) },
      }),
    }),
  ) as { metadata: { uid: string } };
  const names = Array.from({ length: size }, (_, i) => `${name}-${i}`);
  for (const sandbox of names) {
    await cluster.applyObject({
      apiVersion: 'agents.kruise.io/v1alpha1',
      kind: 'Sandbox',
      metadata: {
        name: sandbox,
        namespace: NS,
        labels: { [POOL_LABEL]: name, 'agents.kruise.io/sandbox-pool': name },
        ownerReferences: [
          {
            apiVersion: 'agents.kruise.io/v1alpha1',
            kind: 'SandboxSet',
            name,
            uid: set.metadata.uid,
            controller: true,
          },
        ],
      },
      spec: { runtimes: runtimes.map((r) => ({ name: r })) },
    });
  }
  bounds.sizes.set(name, size);
  return names;
}

/** The UID of the pod a Sandbox's status names, once it names one. */
async function podOf(sandbox: string): Promise<string> {
  return until(`a pod for ${sandbox}`, async () => {
    const uid = (await kubectl(['get', 'sandbox', sandbox, '-o', 'jsonpath={.status.podInfo.podUID}'])).trim();
    return uid === '' ? undefined : uid;
  });
}

async function podExists(uid: string): Promise<boolean> {
  const uids = (await kubectl(['get', 'pods', '-o', 'jsonpath={.items[*].metadata.uid}'])).split(/\s+/);
  return uids.includes(uid);
}

/** A sample of deliver-env's gauge or counter, read when it has the value `test` wants. */
async function metric(name: string, labels: string, test: (value: number) => boolean): Promise<number> {
  return until(
    `${name}${labels} as expected`,
    async () => {
      if (deliver === undefined) return undefined;
      const line = (await metricsText(deliver.metricsPort()))
        .split('\n')
        .find((l) => l.startsWith(`${name}${labels} `));
      const value = Number(line?.split(' ')[1]);
      return line !== undefined && test(value) ? value : undefined;
    },
    60_000,
  );
}

const eventsOf = async (sandbox: string, reason: string): Promise<EventItem[]> =>
  (await world.events(sandbox)).filter((e) => e.reason === reason);

/** The pool pod state `explain --sandbox` gives, as JSON. */
function explainSandbox(sandbox: string): Promise<{ poolPod?: Json; revision?: Json }> {
  const args = [CLI, 'explain', '--kubeconfig', cluster.kubeconfigPath, '--sandbox', `${NS}/${sandbox}`, '-o', 'json'];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`explain failed: ${stderr}`));
      else resolve(JSON.parse(stdout) as { poolPod?: Json; revision?: Json });
    });
  });
}

async function editConfig(key: string, value: unknown): Promise<void> {
  config = { ...config, [key]: JSON.stringify(value) };
  await cluster.applyObject({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'sandbox-injection-config', namespace: CONFIG_NAMESPACE },
    data: config,
  });
}

async function startDeliver(identity: string, extra: string[]): Promise<DeliverProcess> {
  const started = await startDeliverProcess(
    cluster,
    identity,
    [...controllerArgs(49983, LEASE_NS), ...extra],
    kubeconfig,
  );
  await started.logged((l) => l.msg === 'holding the Lease: delivering', `${identity} leads`);
  return started;
}

/** As upstream's sandbox-manager claims a pool's Sandbox: the claimed label, a request, and no SandboxSet owner. */
async function claim(sandbox: string, pool: string): Promise<void> {
  bounds.claimed.add(sandbox);
  bounds.sizes.set(pool, (bounds.sizes.get(pool) ?? 1) - 1);
  await kubectl([
    'patch',
    'sandbox',
    sandbox,
    '--type=merge',
    '-p',
    JSON.stringify({
      metadata: {
        labels: { 'agents.kruise.io/sandbox-claimed': 'true' },
        annotations: { 'agents.kruise.io/init-runtime-request': JSON.stringify({ envVars: { A: '1' } }) },
        ownerReferences: null,
      },
    }),
  ]);
}

beforeAll(async () => {
  ({ cluster, kubeconfigPath: kubeconfig } = await deliverCluster(NS, LEASE_NS, [REPLACEMENT_RBAC]));
  await cluster.kubectlOk(['apply', '-f', SANDBOXSET_CRD]);
  await cluster.kubectlOk(['wait', '--for=condition=Established', 'crd/sandboxsets.agents.kruise.io', '--timeout=60s']);
  config = {
    ...(parseYaml(readFileSync(CONFIGMAP, 'utf8')) as { data: Record<string, string> }).data,
    'traffic-proxy': JSON.stringify({ containers: [{ name: 'traffic-proxy', image: 'proxy:1' }] }),
  };
  await cluster.applyObject({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'sandbox-injection-config', namespace: CONFIG_NAMESPACE },
    data: config,
  });
  webhook = await startWebhookProcess(cluster);
  await cluster.applyObject(webhookConfiguration('sandbox-injector', webhook.url, webhook.ca.certPem, 'Ignore'));
  const probe = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'probe', namespace: NS, labels: { 'agents.kruise.io/created-by': 'sandbox' } },
    spec: { containers: [{ name: 'main', image: 'app:1' }] },
  };
  await untilWebhookCalled('the webhook', async () => {
    await cluster.kubectl(['create', '--dry-run=server', '-f', '-'], { input: JSON.stringify(probe) });
    return webhook.logs.some((l) => l.msg === 'admission' && l.pod === 'probe') || 'not called yet';
  });
  bounds = new BoundsWatch();
  await bounds.start(cluster.kubeconfigPath);
  pools = new StandInPools(cluster.kubeconfigPath);
  pools.start();
}, 300_000);

afterAll(async () => {
  bounds?.stop();
  await pools?.stop();
  await deliver?.stop();
  await webhook?.stop();
  await world.close();
  await cluster?.stop();
});

describe('pool pods on the real kube-apiserver', () => {
  it('a pool pod created while the webhook was unreachable is reported missing (gauge, Event, explain), then replaced and injected', async () => {
    deliver = await startDeliver('pool-report', []);
    await webhook.stop();
    const [sandbox = ''] = await createPool('pool-m', 1, ['agent-runtime']);
    const first = await podOf(sandbox);
    await webhook.start();
    const stored = JSON.parse(await kubectl(['get', 'pods', '-o', 'json'])) as { items: V1Pod[] };
    expect(stored.items.find((p) => p.metadata?.uid === first)?.metadata?.annotations?.[STATUS]).toBeUndefined();

    await metric('sandbox_injector_pool_pods', '{state="missing"}', (v) => v === 1);
    const [warning] = await until('a PoolPodMissing Event', async () => {
      const found = await eventsOf(sandbox, 'PoolPodMissing');
      return found.length > 0 ? found : undefined;
    });
    expect(warning).toMatchObject({ type: 'Warning' });
    expect(warning?.message).toContain(`pod ${first} is missing its runtimes: no status annotation`);
    const explained = await explainSandbox(sandbox);
    expect(explained.poolPod).toEqual({
      state: 'missing',
      reason: expect.stringContaining('the webhook never saw the pod') as unknown,
      pool: `${NS}/pool-m`,
    });
    // Without --replace-pool-pods, nothing is deleted.
    expect(await podExists(first)).toBe(true);

    await deliver.stop();
    deliver = await startDeliver('pool-replace', REPLACING);
    const replaced = await until(
      'a PoolPodReplaced Event',
      async () => (await eventsOf(sandbox, 'PoolPodReplaced'))[0],
    );
    expect(replaced.message).toContain(`deleted pod ${first} (missing: `);
    const second = await until('a new pod for the Sandbox', async () => {
      const uid = await podOf(sandbox);
      return uid === first ? undefined : uid;
    });
    expect(await podExists(first)).toBe(false);
    const pod = JSON.parse(await kubectl(['get', 'pods', '-o', 'json'])) as { items: V1Pod[] };
    const status = JSON.parse(
      pod.items.find((p) => p.metadata?.uid === second)?.metadata?.annotations?.[STATUS] ?? '{}',
    ) as Json;
    expect(status).toMatchObject({
      injected: ['agent-runtime'],
      revision: expect.stringMatching(/^sha256:/) as unknown,
    });
    await metric('sandbox_injector_pool_pods', '{state="missing"}', (v) => v === 0);
    await metric('sandbox_injector_pool_pod_replacements_total', '{state="missing"}', (v) => v === 1);
    expect((await explainSandbox(sandbox)).poolPod).toMatchObject({ state: 'fine' });
  });

  it('after a ConfigMap edit, the pools are reported stale and replaced at most N at a time and M per pool', async () => {
    const names = [
      ...(await createPool('pool-a', 3, ['agent-runtime'])),
      ...(await createPool('pool-b', 3, ['agent-runtime'])),
      ...(await createPool('pool-c', 3, ['agent-runtime'])),
    ];
    const before = new Map<string, string>();
    for (const name of names) before.set(name, await podOf(name));
    // Every pool pod, pool-m's included, fine and Ready under the config as it is.
    await metric('sandbox_injector_pool_pods', '{state="fine"}', (v) => v === 10);
    await until('every pool pod Ready', () => (bounds.notReadyNow() === 0 ? true : undefined));
    bounds.reset();

    const agentRuntime = JSON.parse(config['agent-runtime'] ?? '{}') as { mainContainer: { env: Json[] } };
    agentRuntime.mainContainer.env.push({ name: 'EDITED', value: '1' });
    await editConfig('agent-runtime', agentRuntime);

    for (const name of names) {
      const warning = await until(
        `a PoolPodStale Event on ${name}`,
        async () => (await eventsOf(name, 'PoolPodStale'))[0],
      );
      expect(warning.message).toContain(`pod ${before.get(name) ?? ''} is stale: it records sha256:`);
    }
    await until(
      'every pool pod replaced',
      async () => {
        for (const name of names) if ((await podOf(name)) === before.get(name)) return undefined;
        return true;
      },
      120_000,
    );
    await metric('sandbox_injector_pool_pods', '{state="fine"}', (v) => v === 10);
    await metric('sandbox_injector_pool_pods', '{state="stale"}', (v) => v === 0);
    await metric('sandbox_injector_pool_pod_replacements_total', '{state="stale"}', (v) => v === 10);
    expect(bounds.maxPerPool).toBeLessThanOrEqual(M);
    expect(bounds.maxInAll).toBeLessThanOrEqual(N);
    expect(bounds.maxInAll).toBeGreaterThan(0);
    expect(pools.errors).toEqual([]);
  });

  it("never deletes a claimed Sandbox's pod, stale or not, nor the pod of a claim made during a replacement", async () => {
    const [early = '', one = '', other = ''] = await createPool('pool-e', 3, ['agent-runtime', 'csi']);
    const pods = new Map<string, string>();
    for (const name of [early, one, other]) pods.set(name, await podOf(name));
    await metric('sandbox_injector_pool_pods', '{state="fine"}', (v) => v === 13);
    await claim(early, 'pool-e');
    await metric('sandbox_injector_pool_pods', '{state="fine"}', (v) => v === 12);

    const deletedBefore = bounds.deleted.length;
    const csi = JSON.parse(config.csi ?? '{}') as { volume: Json[] };
    csi.volume.push({ name: 'edited', emptyDir: {} });
    await editConfig('csi', csi);
    // One of the two unclaimed pods is replaced first (one at a time in a pool); the other is claimed meanwhile.
    const gone = await until('the first replacement in pool-e', () =>
      bounds.deleted.slice(deletedBefore).find((d) => d.pool === 'pool-e'),
    );
    const landing = gone.sandbox === one ? other : one;
    await claim(landing, 'pool-e');
    const replacedOne = gone.sandbox;
    await until('the replaced Sandbox has a new pod', async () =>
      (await podOf(replacedOne)) !== pods.get(replacedOne) ? true : undefined,
    );
    await metric('sandbox_injector_pool_pods', '{state="stale"}', (v) => v === 0);
    await metric('sandbox_injector_pool_replacements_in_flight', '', (v) => v === 0);
    expect(await podExists(pods.get(early) ?? '')).toBe(true);
    expect(await podExists(pods.get(landing) ?? '')).toBe(true);
    expect(bounds.deleted.filter((d) => d.pool === 'pool-e').map((d) => d.sandbox)).toEqual([replacedOne]);
    expect(await eventsOf(early, 'PoolPodStale')).toEqual([]);
    expect(await eventsOf(landing, 'PoolPodReplaced')).toEqual([]);
  });

  it('a config key that fails to inject stops the pool after the second round, with the Event', async () => {
    // pool-m, pool-a to pool-c, and the one of pool-e that is still unclaimed: all fine.
    await metric('sandbox_injector_pool_pods', '{state="fine"}', (v) => v === 11);
    const names = await createPool('pool-d', 3, ['agent-runtime', 'traffic-proxy']);
    const pods = new Map<string, string>();
    for (const name of names) pods.set(name, await podOf(name));
    await metric('sandbox_injector_pool_pods', '{state="fine"}', (v) => v === 14);
    const deletedBefore = bounds.deleted.length;
    // Its container now has the name of the pods' own: the webhook skips the runtime in every new pod.
    await editConfig('traffic-proxy', { containers: [{ name: 'main', image: 'proxy:2' }] });

    const stopped = await until(
      'a PoolReplacementStopped Event in pool-d',
      async () => {
        for (const name of names) {
          const [event] = await eventsOf(name, 'PoolReplacementStopped');
          if (event !== undefined) return event;
        }
        return undefined;
      },
      120_000,
    );
    expect(stopped.type).toBe('Warning');
    expect(stopped.message).toMatch(
      /^pool e2e-pool-pods\/pool-d: pod \S+ came back stale: .*skipped at its admission: traffic-proxy \(container-name-conflict\)/,
    );
    await metric('sandbox_injector_pool_replacement_stopped_pools', '', (v) => v === 1);
    // Once the last replacement's pod is Ready, nothing is in flight, and nothing more of the pool was deleted.
    await metric('sandbox_injector_pool_replacements_in_flight', '', (v) => v === 0);
    const deletedInPool = bounds.deleted.slice(deletedBefore).filter((d) => d.pool === 'pool-d');
    expect(deletedInPool).toHaveLength(2);
    const untouched = names.filter((name) => !deletedInPool.some((d) => d.sandbox === name));
    expect(untouched).toHaveLength(1);
    expect(await podExists(pods.get(untouched[0] ?? '') ?? '')).toBe(true);
    await metric('sandbox_injector_pool_pods', '{state="stale"}', (v) => v === 3);
  });
});
