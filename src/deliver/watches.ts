/**
 * The caches delivery reads: every Sandbox, and every pod the Sandbox controller made (label
 * `agents.kruise.io/created-by: sandbox`), indexed by the Sandbox that controls it. Each change enqueues the
 * Sandbox it concerns; each full list enqueues them all.
 */
import type { KubernetesListObject, V1Pod } from '@kubernetes/client-node';
import { SANDBOX_GROUP, SANDBOX_VERSION, sandboxOwner } from '../admission/sandbox-owner.js';
import type { Pod } from '../injection/index.js';
import type { KubeClients } from '../sources/kube/clients.js';
import { ResilientWatch } from '../sources/kube/resilient-watch.js';
import type { DeliverySandbox } from './claim.js';
import type { SandboxCache } from './controller.js';

const SANDBOX_POD_SELECTOR = 'agents.kruise.io/created-by=sandbox';

type SandboxObject = DeliverySandbox & { apiVersion?: string; kind?: string };

export interface DeliveryWatches {
  cache: SandboxCache;
  readonly synced: boolean;
  start(): void;
  stop(): Promise<void>;
}

export function sandboxKey(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? ''}/${name ?? ''}`;
}

export function deliveryWatches(
  clients: KubeClients,
  enqueue: (key: string) => void,
  onError: (what: string, error: unknown, retryInMs: number) => void,
): DeliveryWatches {
  // Pods by the key of the Sandbox that controls them, then by UID: during a recreate the old and the new pod
  // can both be there for a while.
  const pods = new Map<string, Map<string, V1Pod>>();
  const index = (pod: V1Pod, present: boolean): string | undefined => {
    const owner = sandboxOwner(pod as Pod);
    const uid = pod.metadata?.uid;
    if (owner === undefined || uid === undefined) return undefined;
    const key = sandboxKey(pod.metadata?.namespace, owner.name);
    const byUid = pods.get(key) ?? new Map<string, V1Pod>();
    if (present) byUid.set(uid, pod);
    else byUid.delete(uid);
    if (byUid.size === 0) pods.delete(key);
    else pods.set(key, byUid);
    return key;
  };
  const podChanged = (pod: V1Pod, present: boolean): void => {
    const key = index(pod, present);
    if (key !== undefined) enqueue(key);
  };

  const sandboxes = new ResilientWatch<SandboxObject>({
    watch: clients.watch,
    path: `/apis/${SANDBOX_GROUP}/${SANDBOX_VERSION}/sandboxes`,
    list: async () =>
      (await clients.custom.listClusterCustomObject({
        group: SANDBOX_GROUP,
        version: SANDBOX_VERSION,
        plural: 'sandboxes',
      })) as KubernetesListObject<SandboxObject>,
    onList: (items) => {
      for (const item of items) enqueue(sandboxKey(item.metadata?.namespace, item.metadata?.name));
    },
    onAdd: (item) => enqueue(sandboxKey(item.metadata?.namespace, item.metadata?.name)),
    onUpdate: (item) => enqueue(sandboxKey(item.metadata?.namespace, item.metadata?.name)),
    onDelete: (item) => enqueue(sandboxKey(item.metadata?.namespace, item.metadata?.name)),
    onError: (error, retryInMs) => onError('sandboxes', error, retryInMs),
  });
  const podWatch = new ResilientWatch<V1Pod>({
    watch: clients.watch,
    path: '/api/v1/pods',
    labelSelector: SANDBOX_POD_SELECTOR,
    list: () => clients.core.listPodForAllNamespaces({ labelSelector: SANDBOX_POD_SELECTOR }),
    onList: (items) => {
      const before = [...pods.keys()];
      pods.clear();
      for (const pod of items) index(pod, true);
      for (const key of new Set([...before, ...pods.keys()])) enqueue(key);
    },
    onAdd: (pod) => podChanged(pod, true),
    onUpdate: (pod) => podChanged(pod, true),
    onDelete: (pod) => podChanged(pod, false),
    onError: (error, retryInMs) => onError('pods', error, retryInMs),
  });

  const cache: SandboxCache = {
    get(key) {
      const slash = key.indexOf('/');
      return sandboxes.get(key.slice(slash + 1), key.slice(0, slash));
    },
    *keys() {
      for (const item of sandboxes.list()) yield sandboxKey(item.metadata?.namespace, item.metadata?.name);
    },
    podOf(sandbox) {
      const candidates = [
        ...(pods.get(sandboxKey(sandbox.metadata?.namespace, sandbox.metadata?.name))?.values() ?? []),
      ];
      // The pod being deleted is the old one of a recreate; among the rest, the newest.
      const live = candidates
        .filter((pod) => pod.metadata?.deletionTimestamp === undefined)
        .filter((pod) => {
          const owner = sandboxOwner(pod as Pod);
          return owner?.uid === undefined || owner.uid === sandbox.metadata?.uid;
        })
        .sort((a, b) => created(b) - created(a));
      return live[0] as Pod | undefined;
    },
  };

  return {
    cache,
    get synced() {
      return sandboxes.hasSynced && podWatch.hasSynced;
    },
    start() {
      sandboxes.start();
      podWatch.start();
    },
    async stop() {
      await Promise.all([sandboxes.stop(), podWatch.stop()]);
    },
  };
}

function created(pod: V1Pod): number {
  const at = pod.metadata?.creationTimestamp;
  return at === undefined ? 0 : new Date(at).getTime();
}
