/**
 * Kubernetes Events on the Sandbox: one per write (delivery or clearing) and one per failure streak. The
 * message names what was done or what failed (a count of variables, an operation and a status), never a value
 * or a token.
 */
import type { CoreV1Api, CoreV1Event } from '@kubernetes/client-node';
import { SANDBOX_API_VERSION, SANDBOX_KIND } from '../../sandbox/api.js';
import type { DeliverySandbox } from './claim.js';
import type { DeliveryOutcome, FailureEvent } from './outcome.js';

export const COMPONENT = 'sandbox-injector-deliver-env';

/** The Events on a Sandbox about its pool pod: found missing or stale, replaced (under a claim), a pool stopped. */
export type PoolPodEventReason =
  'PoolPodMissing' | 'PoolPodStale' | 'PoolPodReplaced' | 'PoolPodReplacedUnderClaim' | 'PoolReplacementStopped';

export interface SandboxEvent {
  reason: 'EnvDelivered' | 'EnvCleared' | 'EnvDeliveryHeld' | FailureEvent | PoolPodEventReason;
  type: 'Normal' | 'Warning';
  message: string;
}

/** The Event an outcome gets, if any: a write, or the first failure since the last success. */
export function eventFor(outcome: DeliveryOutcome): SandboxEvent | undefined {
  if (outcome.kind === 'delivered') {
    if (outcome.delivery === 'cleared') {
      return {
        reason: 'EnvCleared',
        type: 'Normal',
        message: `the claim ended: removed .env_ready, env.sh and temporary files from pod ${outcome.podUid}`,
      };
    }
    const what = `${outcome.variables} variable${outcome.variables === 1 ? '' : 's'}`;
    const verb = outcome.delivery === 'change' ? 'rewrote' : 'wrote';
    const why =
      outcome.delivery === 'empty'
        ? ', claimed without a request'
        : outcome.delivery === 'resume'
          ? ', a new pod of the claim'
          : '';
    return {
      reason: 'EnvDelivered',
      type: 'Normal',
      message: `${verb} env.sh (${what}${why}) and .env_ready in pod ${outcome.podUid}`,
    };
  }
  if (outcome.kind === 'held') {
    return {
      reason: 'EnvDeliveryHeld',
      type: 'Warning',
      message: `${outcome.case}: ${outcome.reason}; nothing is sent until the Sandbox's status.podInfo.podUID names exactly one running pod of its own`,
    };
  }
  if (outcome.kind === 'failed' && outcome.firstOfStreak) {
    const retry = outcome.retrying ? 'retrying with backoff' : 'not retried until the Sandbox changes';
    return { reason: outcome.event, type: 'Warning', message: `${outcome.reason}: ${outcome.message}; ${retry}` };
  }
  return undefined;
}

/** The core/v1 Event object for `event` about `sandbox`, as kubectl describe shows them. */
export function eventObject(
  sandbox: DeliverySandbox,
  event: SandboxEvent,
  nowMs: number,
  instance: string,
): CoreV1Event {
  const name = sandbox.metadata?.name ?? '';
  const namespace = sandbox.metadata?.namespace ?? 'default';
  const now = new Date(nowMs);
  return {
    metadata: { generateName: `${name}.`, namespace },
    involvedObject: {
      apiVersion: SANDBOX_API_VERSION,
      kind: SANDBOX_KIND,
      name,
      namespace,
      uid: sandbox.metadata?.uid,
    },
    reason: event.reason,
    type: event.type,
    // Event messages are capped at 1 KiB by kube-apiserver.
    message: event.message.slice(0, 1024),
    source: { component: COMPONENT },
    reportingComponent: COMPONENT,
    reportingInstance: instance,
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

export async function createEvent(core: CoreV1Api, body: CoreV1Event): Promise<void> {
  await core.createNamespacedEvent({ namespace: body.metadata.namespace ?? 'default', body });
}
