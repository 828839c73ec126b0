/**
 * The caches delivery reads: every Sandbox, and every pod labelled as the Sandbox controller's
 * (SANDBOX_POD_SELECTOR), indexed by the Sandbox its controller owner reference names. Anyone who may patch pods
 * can write both, so these are only candidates: which one is the Sandbox's pod is identity's to decide
 * (pod-identity.ts). Each change enqueues the Sandbox it concerns; each full list enqueues them all.
 *
 * The caches keep only the fields below (SANDBOX_FIELDS, POD_FIELDS), cut as each object arrives: a whole pod
 * is its template, managedFields and status, tens of KiB, and a Sandbox's request annotations can reach
 * 256 KiB, so whole objects would put thousands of sandboxes past the Deployment's memory limit. A field that
 * delivery starts to read must be added to its list, or it reads as absent.
 */
import type { V1OwnerReference, V1Pod } from '@kubernetes/client-node';
import { sandboxOwner } from '../../sandbox/owner.js';
import type { Pod } from '../../kube-shapes/kubernetes.js';
import {
  CREATED_BY,
  POLICY_ANNOTATION,
  SANDBOX_CLAIMED,
  SANDBOX_POD_SELECTOR,
  STATUS_ANNOTATION,
} from '../../sandbox/api.js';
import type { KubeClients } from '../../kube-client/clients.js';
import { EACH, fieldKeeper, type FieldPath } from '../../kube-client/keep-fields.js';
import { ResilientWatch } from '../../kube-client/resilient-watch.js';
import { sandboxListWatch } from '../../sandbox/sandbox-watch.js';
import type { Clock } from '../../time/clock.js';
import { DELIVERY_ANNOTATIONS, type DeliverySandbox } from './claim.js';
import type { SandboxCache } from './controller.js';

/** The metadata both caches keep: identity, version, and the times a recreate is told apart by. */
const IDENTITY: readonly FieldPath[] = [
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'creationTimestamp',
  'deletionTimestamp',
].map((key) => ['metadata', key]);

/** The owner references' fields: which one is the controller, and what it is. */
const OWNER: readonly FieldPath[] = ['apiVersion', 'kind', 'name', 'uid', 'controller'].map((key) => [
  'metadata',
  'ownerReferences',
  EACH,
  key,
]);

/** What the Sandbox cache keeps of each Sandbox; the last five are what pool pods are judged by (pool-pods.ts). */
export const SANDBOX_FIELDS: readonly FieldPath[] = [
  ...IDENTITY,
  ['metadata', 'labels', SANDBOX_CLAIMED],
  ...DELIVERY_ANNOTATIONS.map((key) => ['metadata', 'annotations', key]),
  ['spec', 'paused'],
  ['status', 'podInfo', 'podIP'],
  ['status', 'podInfo', 'podUID'],
  ...OWNER,
  ['metadata', 'annotations', POLICY_ANNOTATION],
  // Whole, as the webhook keeps it: upstream's CRD prunes each runtime to its name.
  ['spec', 'runtimes'],
  ['spec', 'envVarsInjectionPolicy'],
];

/**
 * What the pod cache keeps of each pod; of its owner references, only the controller's is kept, and of its
 * conditions only Ready (stripPod). The last four are what pool pods are judged by (pool-pods.ts).
 */
export const POD_FIELDS: readonly FieldPath[] = [
  ...IDENTITY,
  ...OWNER,
  ['metadata', 'labels', CREATED_BY],
  ['metadata', 'annotations', STATUS_ANNOTATION],
  ['spec', 'hostNetwork'],
  ['status', 'podIP'],
  ['status', 'phase'],
  ['metadata', 'annotations', POLICY_ANNOTATION],
  ['spec', 'containers', EACH, 'name'],
  ['spec', 'initContainers', EACH, 'name'],
  ...['type', 'status'].map((key) => ['status', 'conditions', EACH, key]),
  // Which instance of each container runs: a recycled pod's next claim waits for its restart (recycle.ts).
  ['status', 'containerStatuses', EACH, 'name'],
  ['status', 'containerStatuses', EACH, 'containerID'],
  ['status', 'containerStatuses', EACH, 'state', 'running'],
];

const keepSandboxFields = fieldKeeper<SandboxObject>(SANDBOX_FIELDS);
const keepPodFields = fieldKeeper<V1Pod>(POD_FIELDS);

/** A Sandbox as the cache stores it: SANDBOX_FIELDS only. */
export function stripSandbox(sandbox: SandboxObject): SandboxObject {
  return keepSandboxFields(sandbox);
}

/** A pod as the cache stores it: POD_FIELDS only, with only controller owner references and the Ready condition. */
export function stripPod(pod: V1Pod): V1Pod {
  const metadata = pod.metadata;
  const refs = metadata?.ownerReferences;
  const conditions = pod.status?.conditions;
  const cut: V1Pod = { ...pod };
  if (metadata !== undefined && refs !== undefined)
    cut.metadata = { ...metadata, ownerReferences: refs.filter((ref: V1OwnerReference) => ref.controller === true) };
  if (conditions !== undefined)
    cut.status = { ...pod.status, conditions: conditions.filter((condition) => condition.type === 'Ready') };
  return keepPodFields(cut);
}

export type SandboxObject = DeliverySandbox & { apiVersion?: string; kind?: string };

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
  clock: Clock,
): DeliveryWatches {
  // Pods by the key of the Sandbox that controls them, then by UID: during a recreate the old and the new pod
  // can both be there for a while.
  const pods = new Map<string, Map<string, V1Pod>>();
  const index = (pod: V1Pod, present: boolean): string | undefined => {
    const owner = sandboxOwner(pod);
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

  const sandboxes = sandboxListWatch<SandboxObject>(clients, {
    transform: stripSandbox,
    onList: (items) => {
      for (const item of items) enqueue(sandboxKey(item.metadata?.namespace, item.metadata?.name));
    },
    onAdd: (item) => enqueue(sandboxKey(item.metadata?.namespace, item.metadata?.name)),
    onUpdate: (item) => enqueue(sandboxKey(item.metadata?.namespace, item.metadata?.name)),
    onDelete: (item) => enqueue(sandboxKey(item.metadata?.namespace, item.metadata?.name)),
    onError: (error, retryInMs) => onError('sandboxes', error, retryInMs),
    clock,
  });
  const podWatch = new ResilientWatch<V1Pod>({
    watch: clients.watch,
    path: '/api/v1/pods',
    labelSelector: SANDBOX_POD_SELECTOR,
    list: (page) => clients.core.listPodForAllNamespaces({ labelSelector: SANDBOX_POD_SELECTOR, ...page }),
    transform: stripPod,
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
    clock,
  });

  const cache: SandboxCache = {
    get(key) {
      const slash = key.indexOf('/');
      return sandboxes.get(key.slice(slash + 1), key.slice(0, slash));
    },
    *keys() {
      for (const item of sandboxes.list()) yield sandboxKey(item.metadata?.namespace, item.metadata?.name);
    },
    podsOf(sandbox) {
      const candidates = pods.get(sandboxKey(sandbox.metadata?.namespace, sandbox.metadata?.name))?.values() ?? [];
      // Indexed by the owner's name; a pod whose owner reference carries another UID is a former Sandbox's.
      return [...candidates].filter((pod) => {
        const owner = sandboxOwner(pod);
        return owner?.uid === undefined || owner.uid === sandbox.metadata?.uid;
      }) as Pod[];
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
