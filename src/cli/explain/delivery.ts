/**
 * deliver-env's side of a Sandbox, for `explain --sandbox`: is it claimed, which pod the claim goes to and why
 * (or why none), what deliver-env decides, its last Event and whether the env is delivered, and what to do next.
 *
 * The decision is deliver-env's own (`claimDecision` in src/deliver/controller/claim.ts, the pod by `identifyPod` in
 * src/sandbox/pod-identity.ts), made on the objects as the API server holds them, with the settings given as
 * deliver-env's flags. What only deliver-env and the pod know (what is in the env folder) is read from deliver-env's
 * Events on the Sandbox: the newest says what it last did. kube-apiserver keeps Events for an hour by default, so
 * an older delivery may have none left. Pure: facts in, an explanation out.
 */
import { sandboxOwner } from '../../sandbox/owner.js';
import { claimDecision, isClaimed, type ClaimDecision } from '../../deliver/controller/claim.js';
import type { DeliveryPod, DeliverySandbox } from '../../deliver/controller/claim.js';
import { COMPONENT } from '../../deliver/controller/events.js';
import { identifyPod } from '../../sandbox/pod-identity.js';
import { CLAIM_TIMESTAMP, INIT_RUNTIME_REQUEST, SANDBOX_CLAIMED } from '../../sandbox/api.js';
import type { DeliveryExplanation, DeliveryFacts, EnvState, LeaseFacts, SandboxEventRecord } from './delivery-facts.js';
import { nextSteps } from './delivery-next.js';

/** The Event reasons deliver-env records on a Sandbox (src/deliver/controller/events.ts, outcome.ts). */
export const DELIVERY_EVENT_REASONS: ReadonlySet<string> = new Set([
  'EnvDelivered',
  'EnvCleared',
  'EnvDeliveryHeld',
  'EnvDeliveryFailed',
  'EnvNotCleared',
  'EnvPodRecycled',
  'RuntimeUrlRefused',
  'RuntimeTlsUnconfigured',
  'RuntimeTlsRequired',
]);

export function explainDelivery(facts: DeliveryFacts): DeliveryExplanation {
  const { sandbox, settings } = facts;
  const candidates = facts.pods.filter((pod) => controlledBy(pod, sandbox));
  const decision = claimDecision(sandbox, candidates, settings);
  const identity = identifyPod(sandbox, candidates, settings);
  const claimed = isClaimed(sandbox);
  const last = lastDeliveryEvent(facts.events ?? [], claimed);
  const podUid =
    identity.kind === 'pod' ? identity.podUid : identity.kind === 'undecided' ? identity.podUid : undefined;
  const env = envState(claimed, decision, podUid, last);
  const notes: string[] = [];
  if (facts.events === undefined) notes.push(`deliver-env's Events could not be read: ${facts.eventsProblem ?? ''}`);
  else if (last === undefined)
    notes.push(
      "no Event of deliver-env's on the Sandbox: none recorded yet, or expired (kube-apiserver keeps them an hour by default)",
    );
  const explanation: DeliveryExplanation = {
    leader: leaderOf(facts.lease, facts.now),
    claimed,
    ...(claimed ? { claim: claimOf(sandbox) } : {}),
    pod: podOf(identity, decision),
    decision: decisionOf(decision, sandbox),
    ...(last === undefined
      ? {}
      : {
          lastEvent: {
            reason: last.reason,
            type: last.type,
            message: last.message,
            ...(last.at === undefined ? {} : { at: last.at }),
          },
        }),
    env,
    next: [],
    notes,
  };
  explanation.next = nextSteps(explanation, {
    namespace: sandbox.metadata?.namespace ?? 'default',
    paused: sandbox.spec?.paused === true,
    recycledPods: facts.recycledPods,
    lastEventPodUid: last === undefined ? undefined : podUidIn(last.message),
  });
  return explanation;
}

/** The pods the Sandbox controls, as deliver-env's cache finds them: by the owner's name, and its UID when set. */
function controlledBy(pod: DeliveryPod, sandbox: DeliverySandbox): boolean {
  const owner = sandboxOwner(pod);
  return (
    owner !== undefined &&
    owner.name === sandbox.metadata?.name &&
    (owner.uid === undefined || owner.uid === sandbox.metadata?.uid)
  );
}

function claimOf(sandbox: DeliverySandbox): NonNullable<DeliveryExplanation['claim']> {
  const by: string[] = [];
  if (sandbox.metadata?.labels?.[SANDBOX_CLAIMED] === 'true') by.push(`label ${SANDBOX_CLAIMED}=true`);
  const request = sandbox.metadata?.annotations?.[INIT_RUNTIME_REQUEST];
  if (typeof request === 'string' && request !== '') by.push(`annotation ${INIT_RUNTIME_REQUEST}`);
  const at = sandbox.metadata?.annotations?.[CLAIM_TIMESTAMP];
  return { by, ...(at === undefined || at === '' ? {} : { at }) };
}

function leaderOf(lease: LeaseFacts, now: number): DeliveryExplanation['leader'] {
  if (lease.state !== 'held') return { state: lease.state, lease: lease.name, why: lease.why };
  if (lease.endsAt < now) {
    const ago = Math.round((now - lease.endsAt) / 1000);
    return {
      state: 'not-held',
      lease: lease.name,
      why: `held by ${lease.holder}, expired ${ago}s ago: no replica delivers`,
    };
  }
  return { state: 'held', lease: lease.name, holder: lease.holder };
}

type Identity = ReturnType<typeof identifyPod>;

function podOf(identity: Identity, decision: ClaimDecision): DeliveryExplanation['pod'] {
  if (identity.kind === 'none') return { why: 'no pod claims the Sandbox, and its status.podInfo.podUID names none' };
  if (identity.kind === 'undecided')
    return {
      ...(identity.podUid === undefined ? {} : { uid: identity.podUid }),
      why: `${identity.case}: ${identity.reason}`,
    };
  const { pod, podUid, address } = identity;
  const phase = phaseOf(pod) ?? 'no phase yet';
  const where = address === undefined ? `${phase}, no IP of its own yet` : `${phase}, IP ${address}`;
  const waits = decision.kind === 'wait' && decision.why === 'not-wrapped' ? '; no container of it is wrapped' : '';
  return {
    name: pod.metadata.name ?? '',
    uid: podUid,
    why: `the Sandbox's status.podInfo.podUID names it; ${where}${waits}`,
  };
}

/** What each wait means, in the words a reader checks against the objects. */
const WAITS: Record<Extract<ClaimDecision, { kind: 'wait' }>['why'], string> = {
  'no-pod': 'no pod to deliver to',
  'not-wrapped':
    "the pod's status annotation lists no wrapped container: nothing in it waits for a claim, so nothing is sent",
  'no-address': 'the pod does not run yet, or has no IP of its own: nothing is sent until it does',
};

function decisionOf(decision: ClaimDecision, sandbox: DeliverySandbox): DeliveryExplanation['decision'] {
  switch (decision.kind) {
    case 'wait': {
      const paused = decision.why === 'no-pod' && sandbox.spec?.paused === true ? ' (the Sandbox is paused)' : '';
      return { kind: 'wait', case: decision.why, detail: `${WAITS[decision.why]}${paused}` };
    }
    case 'held':
      return { kind: 'held', case: decision.case, detail: `nothing is sent: ${decision.reason}` };
    case 'refused':
      return { kind: 'refused', case: decision.event, detail: `nothing is sent: ${decision.reason}` };
    case 'unclaimed':
      return {
        kind: 'unclaimed',
        detail: `not claimed: deliver-env only clears the pod of an earlier claim's files (${decision.endpoint.url})`,
      };
    case 'deliver': {
      const { target } = decision;
      const what = target.empty
        ? 'an env.sh with no variables (claimed without a request)'
        : `env.sh with ${target.variableCount} variable${target.variableCount === 1 ? '' : 's'}`;
      return { kind: 'deliver', detail: `${what}, then .env_ready, through ${target.endpoint.url}` };
    }
  }
}

/** Events of a clearing, which deliver-env makes only while the Sandbox is not claimed. */
const CLEARING: ReadonlySet<string> = new Set(['EnvCleared', 'EnvNotCleared']);

/**
 * The newest Event deliver-env recorded on the Sandbox that speaks to its state now. Events go out in batches,
 * after the deliveries, and their times are whole seconds, so the order they were written in is not always the
 * order of what they report. Two things are known, though: a clearing is only ever made while the Sandbox is
 * unclaimed, so a claimed Sandbox's clearing Events are of an earlier claim, whenever they were written; and
 * within one second a delivery ends a run of failures (a retry waits half a second), while a clearing follows
 * the delivery of the claim it ends. Past those, the resourceVersion kube-apiserver gave each write (etcd's
 * revision) orders them.
 */
export function lastDeliveryEvent(
  events: readonly SandboxEventRecord[],
  claimed: boolean,
): SandboxEventRecord | undefined {
  const ours = events.filter(
    (event) =>
      DELIVERY_EVENT_REASONS.has(event.reason) &&
      (event.component === undefined || event.component === COMPONENT) &&
      !(claimed && CLEARING.has(event.reason)),
  );
  const rank = (event: SandboxEventRecord): number =>
    CLEARING.has(event.reason) ? 2 : event.reason === 'EnvDelivered' ? 1 : 0;
  const second = (event: SandboxEventRecord): number =>
    event.at === undefined ? 0 : Math.floor((Date.parse(event.at) || 0) / 1000);
  const version = (event: SandboxEventRecord): number => Number(event.resourceVersion ?? '0') || 0;
  return [...ours].sort((a, b) => second(a) - second(b) || rank(a) - rank(b) || version(a) - version(b)).at(-1);
}

/** The pod UID an Event's message names (`in pod UID`, `from pod UID`, `names pod UID`), if any. */
export function podUidIn(message: string): string | undefined {
  return /\bpod ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/.exec(message)?.[1];
}

function envState(
  claimed: boolean,
  decision: ClaimDecision,
  podUid: string | undefined,
  last: SandboxEventRecord | undefined,
): EnvState {
  if (last === undefined) return claimed ? 'not-delivered' : 'none';
  // An Event that names a pod is about that pod only; a failure's names none, and is about the pod of its time.
  const named = podUidIn(last.message);
  const aboutPod = named === undefined ? podUid !== undefined : named === podUid;
  if (claimed)
    return decision.kind === 'deliver' && aboutPod && last.reason === 'EnvDelivered' ? 'delivered' : 'not-delivered';
  if (!aboutPod) return 'none';
  if (last.reason === 'EnvCleared') return 'cleared';
  return last.reason === 'EnvDelivered' || last.reason === 'EnvNotCleared' ? 'not-cleared' : 'none';
}

function phaseOf(pod: DeliveryPod): string | undefined {
  const status: unknown = pod.status;
  if (status === null || typeof status !== 'object') return undefined;
  const phase = (status as { phase?: unknown }).phase;
  return typeof phase === 'string' ? phase : undefined;
}
