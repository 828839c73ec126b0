/**
 * What to do next about a Sandbox's delivery, from what explain found (delivery.ts): one step per thing that
 * holds the claim up, the leader first, since without one nothing else moves. The words match the runbooks of
 * docs/troubleshooting.md and docs/alerts.md, which say more.
 */
import type { UndecidedCase } from '../../sandbox/pod-identity.js';
import type { RefusalReason } from '../../deliver/controller/outcome.js';
import type { RecycledPodMode } from '../../deliver/controller/recycle.js';
import { RUNTIME_TLS_PORT, SANDBOX_POD_SELECTOR } from '../../sandbox/api.js';
import type { DeliveryExplanation } from './delivery-facts.js';

export interface NextContext {
  namespace: string;
  paused: boolean;
  recycledPods: RecycledPodMode;
  /** The pod the newest Event names, if it names one. */
  lastEventPodUid: string | undefined;
}

const HELD: Record<UndecidedCase, string> = {
  'no-pod-uid':
    "wait for upstream's controller to write the pod's UID into the Sandbox's status.podInfo; if it does not, check that the controller runs",
  'pod-gone':
    "the pod the Sandbox names is gone or going (a resume is on its way); if it lasts, check the Sandbox's pod and upstream's controller",
  terminal:
    'the pod has Failed or Succeeded: upstream makes a new one, and the claim goes there once status.podInfo.podUID names it',
  ambiguous: `another live pod claims the Sandbox: find who made it (kubectl get pods -l ${SANDBOX_POD_SELECTOR} -o wide) and delete it; the pod ownership policy keeps such pods out (docs/install.md, "Pod ownership policy")`,
  'host-network': "the pod uses the host network, so its IP is its node's: run Sandbox pods without hostNetwork",
};

const REFUSED: Record<RefusalReason, string> = {
  EnvRequestRefused:
    'fix what writes the claim (a variable name, a value that is not a string, a token or a runtime URL or TLS port that is not one); the next change of the Sandbox is looked at',
  RuntimeUrlRefused:
    "find who wrote the runtime URL annotation: deliver-env follows one only to the pod's own IP, unless it runs with --trust-runtime-url",
  RuntimeTlsUnconfigured:
    'give deliver-env the runtimes\' CA bundle (--runtime-tls-secret; docs/deliver-env.md, "TLS runtimes"), and explain the same flag',
  RuntimeTlsRequired: `give the runtime TLS (${RUNTIME_TLS_PORT}), or turn --require-runtime-tls off`,
  EnvPodRecycled:
    'recreate the pod (kubectl delete pod): its Sandbox controller makes a new one, and the claim goes there',
};

/** What a failure Event's outcome (the first word of its message) asks of the reader. */
const FAILED: Record<string, string> = {
  unauthorized:
    'envd refuses the token: check that the token annotations (or the request\'s accessToken) are the ones envd was initialised with, and that --file-user names a user of the main container\'s image (docs/alerts.md, "SandboxInjectorEnvdUnauthorized")',
  unavailable:
    "envd does not answer (retried with backoff): check that deliver-env's pods reach the pod's IP on envd's port (a NetworkPolicy) and that envd runs in the main container",
  rejected: 'envd answered another 4xx or a redirect: check the runtime URL annotation points at envd',
  refused: 'fix what the Event names; the next change of the Sandbox is looked at',
};

export function nextSteps(found: DeliveryExplanation, context: NextContext): string[] {
  const steps: string[] = [];
  if (found.leader.state !== 'held')
    steps.push(
      `deliver-env is not leading (${found.leader.why ?? ''}): nothing is delivered until a replica holds Lease ${found.leader.lease} (docs/troubleshooting.md, "deliver-env is not leading")`,
    );
  steps.push(...forDecision(found, context));
  return steps;
}

function forDecision(found: DeliveryExplanation, context: NextContext): string[] {
  const { decision } = found;
  const pod = found.pod.name ?? 'the pod';
  switch (decision.kind) {
    case 'wait':
      if (decision.case === 'no-pod')
        return context.paused
          ? ['the Sandbox is paused: a resume makes its pod, and the claim goes there']
          : [
              `wait for upstream's controller to make the pod (kubectl -n ${context.namespace} get pods -l ${SANDBOX_POD_SELECTOR}); if none comes, check the controller, and whether the webhook denies the pod (Result above)`,
            ];
      if (decision.case === 'not-wrapped')
        return [
          `nothing in ${pod} waits for a claim: if it should, set EnvVarsInjectionPolicy Auto on the Sandbox and recreate the pod (docs/troubleshooting.md, "An app started without its variables")`,
        ];
      return [`wait for ${pod} to run (kubectl -n ${context.namespace} describe pod ${pod})`];
    case 'held':
      return [HELD[decision.case as UndecidedCase]];
    case 'refused':
      return [REFUSED[decision.case as RefusalReason]];
    case 'unclaimed':
      return unclaimed(found, pod);
    case 'deliver':
      return delivering(found, context, pod);
  }
}

function unclaimed(found: DeliveryExplanation, pod: string): string[] {
  if (found.env === 'not-cleared' && found.lastEvent?.reason === 'EnvNotCleared')
    return [`the last claim's files stay in ${pod}: recreate the pod if they must not (kubectl delete pod ${pod})`];
  if (found.env === 'not-cleared')
    return ["deliver-env has not cleared the last claim's files yet; if it lasts, read its log"];
  return ['nothing: the pod waits for its next claim'];
}

function delivering(found: DeliveryExplanation, context: NextContext, pod: string): string[] {
  if (found.env === 'delivered')
    return [
      `nothing: the wrapped commands start with the claim's variables (kubectl -n ${context.namespace} logs ${pod}); if the app did not, see docs/troubleshooting.md, "An app started without its variables"`,
    ];
  const last = found.lastEvent;
  if (last?.reason === 'EnvDelivered' && context.lastEventPodUid !== found.pod.uid)
    return [`the claim went to an earlier pod (${context.lastEventPodUid ?? 'unnamed'}); ${pod} gets it once it runs`];
  if (last?.reason === 'EnvPodRecycled')
    return context.recycledPods === 'recreate'
      ? [REFUSED.EnvPodRecycled]
      : [
          `${pod} served an earlier claim and its wrapped containers have not restarted since: recreate the pod (kubectl delete pod ${pod})`,
        ];
  if (last?.reason === 'EnvDeliveryFailed') {
    const outcome = /^(\w+):/.exec(last.message)?.[1] ?? '';
    return [FAILED[outcome] ?? FAILED.refused ?? ''];
  }
  if (last !== undefined && last.reason in REFUSED) return [REFUSED[last.reason as RefusalReason]];
  return [
    `deliver-env has not reported on this claim yet: it is queued or in flight; if it lasts, read deliver-env's log for the Sandbox (docs/troubleshooting.md, "A claim made but the app never starts")`,
  ];
}
