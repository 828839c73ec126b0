/**
 * Kubernetes Events on the Sandbox, one per delivery and one per failure streak. The message names what was
 * done or what failed (a count of variables, an operation and a status), never a value or a token.
 */
import type { CoreV1Api, CoreV1Event } from '@kubernetes/client-node';
import type { DeliverySandbox } from './claim.js';
import type { DeliveryOutcome } from './deliverer.js';

export const COMPONENT = 'sandbox-injector-deliver-env';

export interface SandboxEvent {
  reason: 'EnvDelivered' | 'EnvDeliveryFailed';
  type: 'Normal' | 'Warning';
  message: string;
}

/** The Event an outcome gets, if any: a delivery, or the first failure since the last success. */
export function eventFor(outcome: DeliveryOutcome): SandboxEvent | undefined {
  if (outcome.kind === 'delivered') {
    const what = `${outcome.variables} variable${outcome.variables === 1 ? '' : 's'}`;
    return {
      reason: 'EnvDelivered',
      type: 'Normal',
      message: `${outcome.rewrite ? 'rewrote' : 'wrote'} env.sh (${what}) and .env_ready in pod ${outcome.podUid}`,
    };
  }
  if (outcome.kind === 'failed' && outcome.firstOfStreak) {
    const retry = outcome.retryInMs === undefined ? 'not retried until the Sandbox changes' : 'retrying with backoff';
    return { reason: 'EnvDeliveryFailed', type: 'Warning', message: `${outcome.reason}: ${outcome.message}; ${retry}` };
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
      apiVersion: 'agents.kruise.io/v1alpha1',
      kind: 'Sandbox',
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
