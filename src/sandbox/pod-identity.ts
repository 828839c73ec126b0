/**
 * Which pod a Sandbox's claim may go to, decided by identity alone: the pod whose UID is the Sandbox's
 * `status.podInfo.podUID`, the field upstream's controller copies from the pod it created. Labels, owner
 * references and annotations are only how the cache finds candidates; anyone who may patch pods in the namespace
 * can write them, so they never decide. Neither does an IP: Kubernetes keeps `status.podIP` on a Failed or
 * Succeeded pod while the network hands the address to another pod, and `podInfo.podIP` still names a deleted
 * pod's address after a pause.
 *
 * The pod is taken only when all of these hold; otherwise nothing is sent, and the case says why:
 *
 * - no-pod-uid:   the Sandbox names no pod yet, though pods claim it;
 * - pod-gone:     the named UID is no pod of the Sandbox's, or that pod is being deleted;
 * - terminal:     the named pod has Failed or Succeeded (its IP may already be another pod's);
 * - ambiguous:    another live pod claims the same Sandbox (upstream makes one pod per Sandbox, under the
 *                 Sandbox's own name, so a second one was made by someone else);
 * - host-network: the named pod shares its node's network, so its IP is the node's and any port on it may be
 *                 another process's.
 *
 * A pod that passes but does not run yet, or has no IP of its own, is waited for quietly: that is every pod's
 * start. Pure: no I/O, no clock.
 */
import { isIP } from 'node:net';
import type { Pod } from '../kube-shapes/kubernetes.js';

/** What identity reads of a Sandbox: the pod its status names. */
export interface IdentifiedSandbox {
  status?: { podInfo?: { podUID?: unknown } };
}

export const UNDECIDED_CASES = ['no-pod-uid', 'pod-gone', 'terminal', 'ambiguous', 'host-network'] as const;
export type UndecidedCase = (typeof UNDECIDED_CASES)[number];

/** Cases that are part of a normal life (a pod being made or replaced): a Warning only if they last. */
export const TRANSIENT_CASES: ReadonlySet<UndecidedCase> = new Set(['no-pod-uid', 'pod-gone']);

export type PodIdentity =
  /** No pod claims the Sandbox and it names none: a pool being filled, a paused sandbox. */
  | { kind: 'none' }
  | { kind: 'undecided'; case: UndecidedCase; podUid: string | undefined; reason: string }
  /** The Sandbox's own pod; `address` is its own IP once it runs, undefined before. */
  | { kind: 'pod'; pod: Pod; podUid: string; address: string | undefined };

const TERMINAL_PHASES = new Set(['Failed', 'Succeeded']);

export interface IdentitySettings {
  /** Take a hostNetwork pod all the same: the operator vouches for every listener on its node (`--allow-host-network`). */
  allowHostNetwork: boolean;
}

/**
 * `candidates`: every pod the cache holds whose controller owner reference names this Sandbox (by name and
 * UID). Their order does not matter.
 */
export function identifyPod(
  sandbox: IdentifiedSandbox,
  candidates: readonly Pod[],
  settings: IdentitySettings,
): PodIdentity {
  const named = sandbox.status?.podInfo?.podUID;
  const live = candidates.filter((pod) => !isDeleting(pod) && !isTerminal(pod));
  if (typeof named !== 'string' || named === '') {
    if (live.length === 0) return { kind: 'none' };
    return undecided(
      'no-pod-uid',
      undefined,
      `status.podInfo.podUID names no pod, and ${countOf(live)} claim the Sandbox`,
    );
  }
  const pod = candidates.find((candidate) => candidate.metadata?.uid === named);
  if (pod === undefined || isDeleting(pod)) {
    const why = pod === undefined ? 'no pod of the Sandbox has that UID' : 'that pod is being deleted';
    return undecided('pod-gone', named, `status.podInfo.podUID names pod ${named}, but ${why}`);
  }
  const phase = phaseOf(pod);
  if (isTerminal(pod))
    return undecided('terminal', named, `pod ${named} is ${phase ?? ''}; its IP may belong to another pod by now`);
  const others = live.filter((candidate) => candidate.metadata?.uid !== named);
  if (others.length > 0)
    return undecided(
      'ambiguous',
      named,
      `${countOf(others)} besides ${named} claim the Sandbox (${others.map(uidOf).join(', ')}); upstream makes one`,
    );
  if (pod.spec?.hostNetwork === true && !settings.allowHostNetwork)
    return undecided('host-network', named, `pod ${named} uses the host's network, so its IP is its node's`);
  return { kind: 'pod', pod, podUid: named, address: phase === 'Running' ? ownAddress(pod) : undefined };
}

/** What of a pod the identity reads, for a digest of a decision's inputs. */
export function podFacts(pod: Pod): unknown[] {
  return [uidOf(pod), phaseOf(pod) ?? null, isDeleting(pod), pod.spec?.hostNetwork === true, ownIp(pod) ?? null];
}

/** Candidates in one order whatever order the cache gave them in, so a digest of them is stable. */
export function byUid(a: Pod, b: Pod): number {
  return uidOf(a) < uidOf(b) ? -1 : uidOf(a) > uidOf(b) ? 1 : 0;
}

function undecided(kind: UndecidedCase, podUid: string | undefined, reason: string): PodIdentity {
  return { kind: 'undecided', case: kind, podUid, reason };
}

function countOf(pods: readonly Pod[]): string {
  return pods.length === 1 ? '1 pod' : `${pods.length} pods`;
}

function uidOf(pod: Pod): string {
  const uid: unknown = pod.metadata?.uid;
  return typeof uid === 'string' ? uid : '';
}

function isDeleting(pod: Pod): boolean {
  const at: unknown = pod.metadata?.deletionTimestamp;
  return at !== undefined && at !== null;
}

function statusOf(pod: Pod): { phase?: unknown; podIP?: unknown } | undefined {
  const status: unknown = pod.status;
  return status !== null && typeof status === 'object' ? status : undefined;
}

/** Failed or Succeeded: Kubernetes keeps its podIP while the network hands the address on. */
function isTerminal(pod: Pod): boolean {
  return TERMINAL_PHASES.has(phaseOf(pod) ?? '');
}

function phaseOf(pod: Pod): string | undefined {
  const phase = statusOf(pod)?.phase;
  return typeof phase === 'string' ? phase : undefined;
}

function ownIp(pod: Pod): unknown {
  return statusOf(pod)?.podIP;
}

/** The pod's own IP as the kubelet reports it; never the Sandbox's copy of it. */
function ownAddress(pod: Pod): string | undefined {
  const ip = ownIp(pod);
  return typeof ip === 'string' && isIP(ip) !== 0 ? ip : undefined;
}
