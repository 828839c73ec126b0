/**
 * Whether an unclaimed Sandbox's pod is what the injection config says it should be, judged purely from the
 * Sandbox, its pod and the config in force: no I/O, no clock.
 *
 * A pre-warmed pod that the webhook never saw (its failurePolicy may be Ignore; pods made while it was being
 * installed or upgraded are admitted as they are) passes every probe and fails only when a tenant claims it.
 * So does, more quietly, a pod injected from last week's config. The states:
 *
 * - missing: the Sandbox asks for runtimes, and the pod carries no status annotation (the webhook writes it on
 *   every pod that asked for runtimes while the ConfigMap exists) and none of the runtimes' containers; or the
 *   policy is Auto and there is no status annotation: the Sandbox controller may have injected the runtimes, but
 *   nothing in the pod waits for the claim's environment;
 * - stale: the revision the pod records (src/config/config-revision.ts) is not what the config in force gives
 *   for the Sandbox's runtimes; a runtime skipped at admission is not in the recorded revision, so such a pod is
 *   stale too, as it lacks what the config asks for;
 * - fine: anything else, a pod whose runtimes the Sandbox controller injected itself without Auto included.
 *
 * Only unclaimed Sandboxes are judged (a claimed one's pod is a tenant's), and only their own pod, as identity
 * decides it (pod-identity.ts). A pod that cannot be judged (no config read yet, a runtime with no usable key,
 * a Sandbox spec the webhook would deny) is said so, and counts in no state.
 *
 * The pool is the SandboxSet that is the Sandbox's controller owner: upstream's claim removes that owner
 * reference (the SandboxSet then makes a new Sandbox), so only a pool's unclaimed Sandboxes carry it.
 */
import type { ConfigSnapshot } from '../../config/injection-config.js';
import { runtimeContainers } from '../../injection/index.js';
import type { Pod } from '../../kube-shapes/kubernetes.js';
import { hasRecord, recordedStatus } from '../../sandbox/injection-status.js';
import { SANDBOX_API_VERSION, SANDBOX_KIND, SANDBOX_SET_KIND, type Sandbox } from '../../sandbox/api.js';
import { selectionFromSandbox } from '../../sandbox/runtime-selection.js';
import { isClaimed, type DeliveryPod, type DeliverySandbox } from '../controller/claim.js';
import { identifyPod, type IdentitySettings } from '../../sandbox/pod-identity.js';

export const POOL_POD_STATES = ['fine', 'missing', 'stale'] as const;
export type PoolPodState = (typeof POOL_POD_STATES)[number];

/** What a pool pod's judgement reads of a Sandbox, besides what delivery reads. */
export type PoolSandbox = DeliverySandbox & {
  metadata?: { ownerReferences?: unknown; deletionTimestamp?: unknown };
  spec?: { runtimes?: unknown; envVarsInjectionPolicy?: unknown };
};

/** The SandboxSet a Sandbox belongs to: `namespace/name` and its UID. */
export interface PoolRef {
  key: string;
  uid: string;
}

export type NotJudgedWhy = 'claimed' | 'no-pod' | 'no-config-yet' | 'spec-invalid' | 'key-unusable';

export type PoolPodJudgement =
  | { kind: 'not-judged'; why: NotJudgedWhy; reason: string }
  | {
      kind: 'judged';
      state: PoolPodState;
      reason: string;
      sandboxUid: string;
      podUid: string;
      podName: string;
      /** The pod's resourceVersion as judged: a delete is conditioned on it. */
      podVersion: string | undefined;
      ready: boolean;
      pool: PoolRef | undefined;
      runtimes: readonly string[];
      /** The revision the config in force gives for the runtimes; undefined when they are none. */
      expected: string | undefined;
    };

/** The config as deliver-env last read it; undefined before its first listing. */
export type ConfigInForce = ConfigSnapshot | undefined;

/** The pool of a Sandbox: its controller owner when that is a SandboxSet. */
export function poolOf(sandbox: PoolSandbox): PoolRef | undefined {
  const refs = sandbox.metadata?.ownerReferences;
  if (!Array.isArray(refs)) return undefined;
  const owner = (refs as unknown[]).find((ref): ref is { name: string; uid: string } => {
    const r = ref as Record<string, unknown> | null;
    return (
      r !== null &&
      typeof r === 'object' &&
      r.controller === true &&
      r.apiVersion === SANDBOX_API_VERSION &&
      r.kind === SANDBOX_SET_KIND &&
      typeof r.name === 'string' &&
      typeof r.uid === 'string'
    );
  });
  if (owner === undefined) return undefined;
  return { key: `${sandbox.metadata?.namespace ?? ''}/${owner.name}`, uid: owner.uid };
}

export function judgePoolPod(
  sandbox: PoolSandbox,
  candidates: readonly DeliveryPod[],
  config: ConfigInForce,
  settings: IdentitySettings,
): PoolPodJudgement {
  if (isClaimed(sandbox)) return notJudged('claimed', "a claimed Sandbox's pod is its tenant's: it is not judged");
  if (sandbox.metadata?.deletionTimestamp !== undefined && sandbox.metadata.deletionTimestamp !== null)
    return notJudged('no-pod', 'the Sandbox is being deleted');
  const identity = identifyPod(sandbox, candidates, settings);
  if (identity.kind !== 'pod')
    return notJudged('no-pod', identity.kind === 'none' ? 'the Sandbox has no pod' : identity.reason);
  const { pod, podUid } = identity;
  if (config === undefined) return notJudged('no-config-yet', 'the injection ConfigMap has not been read yet');
  const label = `Sandbox ${sandbox.metadata?.namespace ?? ''}/${sandbox.metadata?.name ?? ''}`;
  const selection = selectionFromSandbox(asSandbox(sandbox), pod, label);
  if (!selection.ok) return notJudged('spec-invalid', `the webhook would deny its pods: ${selection.denial.message}`);
  const { runtimes, policy } = selection;
  const judged = (state: PoolPodState, reason: string, expected?: string): PoolPodJudgement => ({
    kind: 'judged',
    state,
    reason,
    sandboxUid: sandbox.metadata?.uid ?? '',
    podUid,
    podName: pod.metadata.name ?? '',
    podVersion: typeof pod.metadata.resourceVersion === 'string' ? pod.metadata.resourceVersion : undefined,
    ready: isReady(pod),
    pool: poolOf(sandbox),
    runtimes,
    expected,
  });
  if (runtimes.length === 0) return judged('fine', 'the Sandbox asks for no runtime: the webhook leaves its pod as is');
  if (!config.present)
    return judged('fine', `ConfigMap ${config.name} does not exist: the webhook admits pods unchanged`);
  const unusable = runtimes.filter((runtime) => config.valid.get(runtime) === undefined);
  if (unusable.length > 0)
    return notJudged(
      'key-unusable',
      `ConfigMap ${config.name} has no usable key for ${unusable.join(', ')}: the webhook denies such pods`,
    );
  const expected = config.revision(runtimes);
  const status = recordedStatus(pod);
  const names = runtimes.join(', ');
  if (!hasRecord(status)) {
    if (policy === 'Auto')
      return judged(
        'missing',
        `policy Auto, and no status annotation: the webhook never saw the pod, so nothing in it waits for the claim's environment`,
        expected,
      );
    if (!holdsAnyContainer(pod, runtimes, config))
      return judged(
        'missing',
        `no status annotation and none of the containers of ${names}: the webhook never saw the pod`,
        expected,
      );
    return judged(
      'fine',
      `the containers of ${names} are in the pod (the Sandbox controller injected them), and nothing else is asked`,
      expected,
    );
  }
  if (status.revision === undefined)
    return judged('fine', 'its status records no revision (a webhook that did not write one): not judged stale');
  if (status.revision === expected)
    return judged('fine', `it records ${status.revision}, what the config in force gives for ${names}`, expected);
  const skipped = status.skipped.map((skip) => `${skip.runtime} (${skip.reason})`);
  const why = skipped.length === 0 ? '' : `; skipped at its admission: ${skipped.join(', ')}`;
  return judged(
    'stale',
    `it records ${status.revision}, the config in force gives ${expected ?? 'none'} for ${names}${why}`,
    expected,
  );
}

function notJudged(why: NotJudgedWhy, reason: string): PoolPodJudgement {
  return { kind: 'not-judged', why, reason };
}

/** Whether any container the runtimes' configs add is in the pod, by name: the caches keep only names. */
function holdsAnyContainer(pod: Pod, runtimes: readonly string[], config: ConfigSnapshot & { present: true }): boolean {
  const inPod = new Set([...(pod.spec.containers ?? []), ...(pod.spec.initContainers ?? [])].map((c) => c.name));
  return runtimes.some((runtime) => {
    const runtimeConfig = config.valid.get(runtime);
    return (
      runtimeConfig !== undefined &&
      runtimeContainers(runtime, runtimeConfig).some(({ container }) => inPod.has(container.name))
    );
  });
}

/** The pod's Ready condition, as the kubelet reports it. */
export function isReady(pod: DeliveryPod): boolean {
  const status: unknown = pod.status;
  if (status === null || typeof status !== 'object') return false;
  const conditions = (status as { conditions?: unknown }).conditions;
  return (
    Array.isArray(conditions) &&
    conditions.some((c: unknown) => {
      const condition = c as { type?: unknown; status?: unknown } | null;
      return condition?.type === 'Ready' && condition.status === 'True';
    })
  );
}

/** What the webhook's runtime selection reads of a Sandbox, from the cut object the caches keep. */
function asSandbox(sandbox: PoolSandbox): Sandbox {
  return {
    apiVersion: SANDBOX_API_VERSION,
    kind: SANDBOX_KIND,
    metadata: {
      name: sandbox.metadata?.name,
      namespace: sandbox.metadata?.namespace,
      uid: sandbox.metadata?.uid,
      annotations: sandbox.metadata?.annotations,
    },
    spec: { runtimes: sandbox.spec?.runtimes, envVarsInjectionPolicy: sandbox.spec?.envVarsInjectionPolicy },
  };
}
