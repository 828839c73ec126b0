/**
 * deliver-env's caches. What they keep of a Sandbox and a pod: exactly the listed fields, whatever else the
 * objects carry; the fields the delivery decision reads are checked through claimDecision itself, so a field it
 * starts to read without being added to the lists fails here. And what they do: which Sandbox each list and
 * each watch event enqueues, and which pod is a Sandbox's, on client-node's real ListWatch over a scripted
 * watch and lists the test gives.
 */
import { Agent as HttpsAgent } from 'node:https';
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesListObject,
  type V1Pod,
  type V1PodList,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { claimDecision } from '../../../src/deliver/controller/claim.js';
import { judgePoolPod, type PoolSandbox } from '../../../src/deliver/pools/pool-pods.js';
import {
  deliveryWatches,
  stripPod,
  stripSandbox,
  type SandboxObject,
} from '../../../src/deliver/controller/watches.js';
import type { Pod } from '../../../src/injection/index.js';
import { InjectionConfigStore } from '../../../src/config/injection-config.js';
import type { KubeClients } from '../../../src/kube-client/clients.js';
import { AGENT_CONFIG } from '../../support/builders.js';
import { ManualClock } from '../../support/manual-clock.js';
import { ScriptedWatch, unreachableKubeConfig, type ScriptedRequest } from '../../support/scripted-watch.js';
import { wrappedSandboxPod } from '../../support/wrapped-sandbox-pod.js';

const managedFields = [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:x': {} } } }];

// Typed after the fact: DeliverySandbox declares only what delivery reads, and a Sandbox carries more.
const sandbox = {
  apiVersion: 'agents.kruise.io/v1alpha1',
  kind: 'Sandbox',
  metadata: {
    name: 'sbx',
    namespace: 'ns',
    uid: 'sandbox-uid',
    resourceVersion: '12',
    creationTimestamp: '2026-01-01T00:00:00Z',
    deletionTimestamp: '2026-01-02T00:00:00Z',
    generation: 3,
    managedFields,
    labels: { 'agents.kruise.io/sandbox-claimed': 'true', 'agents.kruise.io/sandbox-pool': 'pool-a', team: 'x' },
    ownerReferences: [
      {
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'SandboxSet',
        name: 'pool-a',
        uid: 'pool-uid',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
    annotations: {
      'agents.kruise.io/init-runtime-request': JSON.stringify({ envVars: { A: '1' }, accessToken: 't' }),
      'agents.kruise.io/runtime-url': 'http://10.0.0.9:49983',
      'agents.kruise.io/runtime-access-token': 'tok',
      'agents.kruise.io/claim-timestamp': '2026-01-01T00:00:01Z',
      'agents.kruise.io/runtime-tls-port': '49984',
      'e2b.agents.kruise.io/envd-url': 'http://10.0.0.9:49983',
      'e2b.agents.kruise.io/envd-access-token': 'legacy',
      'agents.kruise.io/runtimes': 'agent-runtime',
      'agents.kruise.io/env-vars-injection-policy': 'Auto',
      'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(10_000),
    },
  },
  spec: {
    paused: true,
    runtimes: [{ name: 'agent-runtime' }],
    template: { spec: { containers: [{ name: 'main', image: 'app:1' }] } },
  },
  status: { phase: 'Running', podInfo: { podIP: '10.0.0.9', podUID: 'pod-uid', nodeName: 'n1' }, conditions: [] },
} as SandboxObject;

const pod = (): V1Pod => {
  const made = wrappedSandboxPod({ sandbox: 'sbx', sandboxUid: 'sandbox-uid', namespace: 'ns' }) as V1Pod;
  const metadata = made.metadata ?? {};
  made.metadata = {
    ...metadata,
    uid: 'pod-uid',
    resourceVersion: '30',
    creationTimestamp: new Date('2026-01-01T00:00:00Z'),
    managedFields,
    labels: { ...metadata.labels, 'pod-template-hash': 'abc' },
    annotations: { ...metadata.annotations, 'agents.kruise.io/runtimes': 'agent-runtime' },
    ownerReferences: [
      { apiVersion: 'v1', kind: 'Other', name: 'o', uid: 'o-uid', controller: false, blockOwnerDeletion: true },
      ...(metadata.ownerReferences ?? []).map((ref) => ({ ...ref, blockOwnerDeletion: true })),
    ],
  };
  made.spec = { ...made.spec, containers: made.spec?.containers ?? [], hostNetwork: false, nodeName: 'n1' };
  made.spec.initContainers = [{ name: 'agent-runtime', image: 'agent-runtime:1', restartPolicy: 'Always' }];
  made.status = {
    phase: 'Running',
    podIP: '10.0.0.9',
    hostIP: '192.168.0.1',
    conditions: [
      { type: 'PodScheduled', status: 'True' },
      { type: 'Ready', status: 'True', lastTransitionTime: new Date('2026-01-01T00:00:05Z') },
    ],
  };
  return made;
};

describe('stripSandbox', () => {
  it('keeps identity, the claimed label, the delivery annotations, spec.paused, status.podInfo.{podIP, podUID}, and what pool pods are judged by, nothing else', () => {
    expect(stripSandbox(sandbox)).toEqual({
      metadata: {
        name: 'sbx',
        namespace: 'ns',
        uid: 'sandbox-uid',
        resourceVersion: '12',
        creationTimestamp: '2026-01-01T00:00:00Z',
        deletionTimestamp: '2026-01-02T00:00:00Z',
        labels: { 'agents.kruise.io/sandbox-claimed': 'true' },
        ownerReferences: [
          {
            apiVersion: 'agents.kruise.io/v1alpha1',
            kind: 'SandboxSet',
            name: 'pool-a',
            uid: 'pool-uid',
            controller: true,
          },
        ],
        annotations: {
          'agents.kruise.io/env-vars-injection-policy': 'Auto',
          'agents.kruise.io/init-runtime-request': JSON.stringify({ envVars: { A: '1' }, accessToken: 't' }),
          'agents.kruise.io/runtime-url': 'http://10.0.0.9:49983',
          'agents.kruise.io/runtime-access-token': 'tok',
          'agents.kruise.io/claim-timestamp': '2026-01-01T00:00:01Z',
          'agents.kruise.io/runtime-tls-port': '49984',
          'e2b.agents.kruise.io/envd-url': 'http://10.0.0.9:49983',
          'e2b.agents.kruise.io/envd-access-token': 'legacy',
        },
      },
      spec: { paused: true, runtimes: [{ name: 'agent-runtime' }] },
      status: { podInfo: { podIP: '10.0.0.9', podUID: 'pod-uid' } },
    });
  });

  it('leaves out what is absent, and does not change the object it reads', () => {
    const bare = { metadata: { name: 'b', namespace: 'ns', labels: { team: 'x' } }, status: {} };
    expect(stripSandbox(bare)).toEqual({ metadata: { name: 'b', namespace: 'ns' } });
    expect(bare.metadata.labels).toEqual({ team: 'x' });
  });
});

describe('stripPod', () => {
  it('keeps identity, the controller owner reference, the created-by label, the status annotation, hostNetwork, podIP, phase, and what pool pods are judged by', () => {
    expect(stripPod(pod())).toEqual({
      metadata: {
        name: 'sbx-pod',
        namespace: 'ns',
        uid: 'pod-uid',
        resourceVersion: '30',
        creationTimestamp: new Date('2026-01-01T00:00:00Z'),
        ownerReferences: [
          {
            apiVersion: 'agents.kruise.io/v1alpha1',
            kind: 'Sandbox',
            name: 'sbx',
            uid: 'sandbox-uid',
            controller: true,
          },
        ],
        labels: { 'agents.kruise.io/created-by': 'sandbox' },
        annotations: {
          'agents.kruise.io/runtime-injection-status':
            pod().metadata?.annotations?.['agents.kruise.io/runtime-injection-status'],
        },
      },
      spec: { hostNetwork: false, containers: [{ name: 'main' }], initContainers: [{ name: 'agent-runtime' }] },
      status: { podIP: '10.0.0.9', phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    });
  });

  it('keeps a pod without owner references without any', () => {
    const orphan = pod();
    delete orphan.metadata?.ownerReferences;
    expect(stripPod(orphan).metadata?.ownerReferences).toBeUndefined();
  });

  it('gives the delivery decision what the whole objects give it', () => {
    // The Sandbox advertises a TLS port: with a bundle, the decision is a delivery over HTTPS.
    const settings = {
      runtimePort: 49983,
      trustRuntimeUrl: false,
      requireTls: false,
      allowHostNetwork: false,
      tls: { kind: 'ok' as const, agent: new HttpsAgent(), version: 1 },
    };
    const unpaused = { ...sandbox, spec: { ...sandbox.spec, paused: false } };
    const whole = claimDecision(unpaused, [pod() as Pod], settings);
    expect(whole.kind).toBe('deliver');
    expect(claimDecision(stripSandbox(unpaused), [stripPod(pod()) as Pod], settings)).toEqual(whole);
  });
});

describe('the cut objects', () => {
  it('give the pool pod judgement what the whole objects give it', () => {
    const store = new InjectionConfigStore();
    store.update({ 'agent-runtime': JSON.stringify(AGENT_CONFIG) });
    const config = store.snapshot();
    const unclaimed: PoolSandbox = structuredClone(sandbox);
    const metadata = unclaimed.metadata ?? {};
    metadata.labels = { team: 'x' };
    delete metadata.deletionTimestamp;
    delete metadata.annotations?.['agents.kruise.io/init-runtime-request'];
    const stalePod = pod();
    const status = { injected: ['agent-runtime'], present: [], skipped: [], wrapped: ['main'], revision: 'sha256:0' };
    stalePod.metadata = {
      ...stalePod.metadata,
      annotations: { 'agents.kruise.io/runtime-injection-status': JSON.stringify(status) },
    };
    const bare = pod();
    bare.metadata = { ...bare.metadata, annotations: {} };
    const settings = { allowHostNetwork: false };
    for (const [made, expected] of [
      [stalePod, 'stale'],
      [bare, 'missing'],
    ] as const) {
      const whole = judgePoolPod(unclaimed, [made as Pod], config, settings);
      expect(whole).toMatchObject({ kind: 'judged', state: expected, pool: { key: 'ns/pool-a' } });
      expect(judgePoolPod(stripSandbox(unclaimed), [stripPod(made) as Pod], config, settings)).toEqual(whole);
    }
  });
});

const SANDBOXES_PATH = '/apis/agents.kruise.io/v1alpha1/sandboxes';
const PODS_PATH = '/api/v1/pods';

function aSandbox(name: string, uid = `${name}-uid`): SandboxObject {
  return {
    apiVersion: 'agents.kruise.io/v1alpha1',
    kind: 'Sandbox',
    metadata: { name, namespace: 'ns', uid, resourceVersion: '1', annotations: { team: 'x' } },
  };
}

function aPod(sandbox: string, name: string, extra: { uid?: string; sandboxUid?: string; createdAt?: string } = {}) {
  const made = wrappedSandboxPod({ sandbox, sandboxUid: extra.sandboxUid ?? `${sandbox}-uid`, namespace: 'ns', name });
  const pod = made as V1Pod;
  pod.metadata = {
    ...pod.metadata,
    uid: extra.uid ?? `${name}-uid`,
    resourceVersion: '1',
    creationTimestamp: new Date(extra.createdAt ?? '2026-01-01T00:00:00Z'),
  };
  return pod;
}

/** The caches over lists the test sets and a watch it scripts; `enqueued` is every key enqueued, in order. */
function caches(lists: { sandboxes: SandboxObject[]; pods: V1Pod[] }) {
  const config = unreachableKubeConfig();
  const core = config.makeApiClient(CoreV1Api);
  core.listPodForAllNamespaces = (): Promise<V1PodList> =>
    Promise.resolve({ metadata: { resourceVersion: '10' }, items: structuredClone(lists.pods) });
  const custom = config.makeApiClient(CustomObjectsApi);
  custom.listClusterCustomObject = (): Promise<KubernetesListObject<SandboxObject>> =>
    Promise.resolve({ metadata: { resourceVersion: '10' }, items: structuredClone(lists.sandboxes) });
  const watch = new ScriptedWatch();
  const clients: KubeClients = {
    kubeConfig: config,
    core,
    custom,
    watch,
    api: () => {
      throw new Error('the caches use no other API');
    },
  };
  const enqueued: string[] = [];
  const errors: unknown[] = [];
  const watches = deliveryWatches(
    clients,
    (key) => enqueued.push(key),
    (_what, error) => errors.push(error),
    new ManualClock(),
  );
  /** Starts both caches; resolves with their watch requests once both lists are in. */
  const start = async (): Promise<{ sandboxes: ScriptedRequest; pods: ScriptedRequest }> => {
    const requests = Promise.all([watch.nextRequest(SANDBOXES_PATH), watch.nextRequest(PODS_PATH)]);
    watches.start();
    const [sandboxes, pods] = await requests;
    return { sandboxes, pods };
  };
  return { watches, enqueued, errors, start, watch };
}

describe('deliveryWatches', () => {
  it('enqueues every listed Sandbox, and is synced only once both lists are in', async () => {
    const { watches, enqueued, errors, start } = caches({
      sandboxes: [aSandbox('a'), aSandbox('b')],
      pods: [aPod('a', 'a-pod')],
    });
    expect(watches.synced).toBe(false);
    await start();
    expect(watches.synced).toBe(true);
    expect(new Set(enqueued)).toEqual(new Set(['ns/a', 'ns/b']));
    expect([...watches.cache.keys()].sort()).toEqual(['ns/a', 'ns/b']);
    expect(errors).toEqual([]);
    await watches.stop();
  });

  it('enqueues the Sandbox a watch event concerns, its own or its pod, and caches only the kept fields', async () => {
    const { watches, enqueued, start } = caches({ sandboxes: [aSandbox('a'), aSandbox('b')], pods: [] });
    const requests = await start();
    enqueued.length = 0;

    requests.sandboxes.event('MODIFIED', {
      ...aSandbox('a'),
      metadata: { ...aSandbox('a').metadata, resourceVersion: '2' },
    });
    expect(enqueued).toEqual(['ns/a']);
    expect(watches.cache.get('ns/a')?.metadata?.annotations).toBeUndefined();

    const pod = aPod('b', 'b-pod');
    requests.pods.event('ADDED', pod);
    expect(enqueued).toEqual(['ns/a', 'ns/b']);
    const sandboxB = watches.cache.get('ns/b');
    expect(sandboxB).toBeDefined();
    expect(sandboxB === undefined ? undefined : watches.cache.podsOf(sandboxB)).toEqual([stripPod(pod)]);

    requests.pods.event('DELETED', pod);
    expect(enqueued).toEqual(['ns/a', 'ns/b', 'ns/b']);
    expect(sandboxB === undefined ? undefined : watches.cache.podsOf(sandboxB)).toEqual([]);

    const orphan = aPod('b', 'orphan');
    delete orphan.metadata?.ownerReferences;
    requests.pods.event('ADDED', orphan);
    requests.sandboxes.event('DELETED', aSandbox('a'));
    expect(enqueued).toEqual(['ns/a', 'ns/b', 'ns/b', 'ns/a']);
    expect(watches.cache.get('ns/a')).toBeUndefined();
    await watches.stop();
  });

  it("offers as a Sandbox's candidates every pod whose controller reference names it, none of an earlier Sandbox's", async () => {
    const sandbox = aSandbox('s', 'now');
    const deleting = aPod('s', 'deleting', { sandboxUid: 'now', createdAt: '2026-01-03T00:00:00Z' });
    deleting.metadata = { ...deleting.metadata, deletionTimestamp: new Date('2026-01-04T00:00:00Z') };
    const pods = [
      aPod('s', 'older', { sandboxUid: 'now', createdAt: '2026-01-01T00:00:00Z' }),
      aPod('s', 'newest', { sandboxUid: 'now', createdAt: '2026-01-02T00:00:00Z' }),
      deleting,
      aPod('s', 'earlier-sandbox', { sandboxUid: 'before', createdAt: '2026-01-05T00:00:00Z' }),
    ];
    const { watches, start } = caches({ sandboxes: [sandbox], pods });
    await start();
    const cached = watches.cache.get('ns/s');
    const names = (cached === undefined ? [] : watches.cache.podsOf(cached)).map((pod) => pod.metadata.name).sort();
    // Which of them is the Sandbox's pod is identity's to decide (pod-identity.ts), not the cache's.
    expect(names).toEqual(['deleting', 'newest', 'older']);
    await watches.stop();
  });

  it('a relist enqueues the Sandbox whose pod went while the watch was down', async () => {
    const lists = { sandboxes: [aSandbox('a')], pods: [aPod('a', 'a-pod')] };
    const { watches, enqueued, start, watch } = caches(lists);
    const requests = await start();
    enqueued.length = 0;
    lists.pods = [];
    const again = watch.nextRequest(PODS_PATH);
    // 410 Gone: the watch's resourceVersion is too old, and ListWatch lists again.
    requests.pods.end(Object.assign(new Error('Gone'), { statusCode: 410 }));
    await again;
    expect(new Set(enqueued)).toEqual(new Set(['ns/a']));
    const cached = watches.cache.get('ns/a');
    expect(cached === undefined ? undefined : watches.cache.podsOf(cached)).toEqual([]);
    await watches.stop();
  });
});
