/**
 * What a Sandbox and its pod ask of delivery, read purely: no I/O. The decision is one of
 *
 * - wait: nothing can be done until something changes (no pod, no wrapped container, no address yet);
 * - unclaimed: the pod lives but no claim is on it (a pool's sandbox, or one recycled): files of an earlier
 *   claim must go;
 * - refused: the Sandbox asks for something this controller will not do (a bad variable name, a runtime URL
 *   that points elsewhere than the pod, TLS without a bundle), with the Event reason that says which;
 * - deliver: the exact bytes to write, and the one endpoint of the one pod they are for.
 *
 * Every decision carries `inputs`, a digest of everything it was made from, so that "has anything changed
 * since?" is one comparison and never a fingerprint kept in step by hand.
 *
 * The right pod is decided by identity (pod-identity.ts): the pod whose UID is the Sandbox's
 * `status.podInfo.podUID`, running, with an IP of its own. Nothing else names it: not owner references or labels,
 * which whoever may patch pods can write, and not `podInfo.podIP`, which still names a deleted pod's address after
 * a pause and may by then be another tenant's. When the pod cannot be decided, the decision is `held`, with the
 * case. A runtime URL annotation is followed only when its host is the pod's own IP, unless the operator trusts
 * them (`--trust-runtime-url`).
 *
 * No value of a variable, and no token, ever appears in a reason.
 */
import { createHash } from 'node:crypto';
import { EnvFileError } from '../../envfile/errors.js';
import { parseEnvJson } from '../../envfile/parse-env-json.js';
import { renderEnvFile } from '../../envfile/render-env-file.js';
import { recordedStatus } from '../../sandbox/injection-status.js';
import type { Pod } from '../../kube-shapes/kubernetes.js';
import {
  CLAIM_TIMESTAMP,
  INIT_RUNTIME_REQUEST,
  LEGACY_ACCESS_TOKEN,
  LEGACY_ENVD_URL,
  RUNTIME_ACCESS_TOKEN,
  RUNTIME_TLS_PORT,
  RUNTIME_URL,
  SANDBOX_CLAIMED,
} from '../../sandbox/api.js';
import type { RefusalReason } from './outcome.js';
import {
  byUid,
  identifyPod,
  podFacts,
  TRANSIENT_CASES,
  type IdentitySettings,
  type UndecidedCase,
} from '../../sandbox/pod-identity.js';
import { wrappedInstances, type WrappedInstance } from './recycle.js';
import type { RuntimeEndpoint } from '../envd/envd-files.js';
import { accessToken, runtimeBase, type EndpointSettings } from './runtime-endpoint.js';

/**
 * Every Sandbox annotation delivery reads: what its caches keep of a Sandbox's annotations, and what its
 * decisions' `inputs` digest covers. One list, so that a new annotation cannot be read and yet be stripped.
 */
export const DELIVERY_ANNOTATIONS: readonly string[] = [
  INIT_RUNTIME_REQUEST,
  RUNTIME_URL,
  LEGACY_ENVD_URL,
  RUNTIME_ACCESS_TOKEN,
  LEGACY_ACCESS_TOKEN,
  RUNTIME_TLS_PORT,
  CLAIM_TIMESTAMP,
];

/** The Sandbox fields delivery reads; everything else of the object is ignored (and stripped from the cache). */
export interface DeliverySandbox {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { paused?: unknown };
  status?: { podInfo?: { podIP?: unknown; podUID?: unknown } };
}

/** The pod as delivery reads it: the injection's shape, whose `status` is read as unknown. */
export type DeliveryPod = Pod;

export interface DeliveryTarget {
  podUid: string;
  endpoint: RuntimeEndpoint;
  /** The whole of env.sh, as `env-file` renders it. */
  content: string;
  /** What .env_ready holds: names this content, so a later look tells whether it was delivered. */
  marker: string;
  variableCount: number;
  /** Claimed without a request (skip-init-runtime): the files say "no claim variables". */
  empty: boolean;
  /** The claim's time from `claim-timestamp`, ms since the epoch (upstream writes whole seconds). */
  claimedAtMs: number | undefined;
  /** The pod's wrapped containers now: whether they restarted since an earlier claim ended (recycle.ts). */
  containers: readonly WrappedInstance[];
}

export type ClaimDecision = { inputs: string } & (
  | { kind: 'wait'; why: 'no-pod' | 'not-wrapped' | 'no-address' }
  /**
   * The pod cannot be decided (pod-identity.ts): nothing is sent. `warn` when it matters to someone: a claim is
   * waiting on it, or the case is one no normal life produces.
   */
  | { kind: 'held'; case: UndecidedCase; podUid: string | undefined; reason: string; warn: boolean }
  /** `containers`: the pod's wrapped containers now, which the recycled mark names if it served a claim. */
  | { kind: 'unclaimed'; podUid: string; endpoint: RuntimeEndpoint; containers: readonly WrappedInstance[] }
  | { kind: 'refused'; podUid: string; event: RefusalReason; reason: string }
  | { kind: 'deliver'; target: DeliveryTarget }
);

/** What a decision depends on besides the objects: the endpoint's settings, the TLS bundle in use, and the pod rule's. */
export type ClaimSettings = EndpointSettings & IdentitySettings;

/** The largest request annotation read; kube-apiserver caps all annotations at 256 KiB together. */
const MAX_REQUEST_CHARS = 256 * 1024;

/** A claim is on the Sandbox: its label, or a request (a claimer that writes only the request still claims). */
export function isClaimed(sandbox: DeliverySandbox): boolean {
  const request = sandbox.metadata?.annotations?.[INIT_RUNTIME_REQUEST];
  return (typeof request === 'string' && request !== '') || sandbox.metadata?.labels?.[SANDBOX_CLAIMED] === 'true';
}

/** The access token of a claimed Sandbox, as upstream reads it; undefined when it carries none. */
export function claimToken(sandbox: DeliverySandbox): string | undefined {
  const annotations = sandbox.metadata?.annotations ?? {};
  const request = annotations[INIT_RUNTIME_REQUEST];
  return accessToken(annotations, typeof request === 'string' && request !== '' ? request : undefined);
}

/**
 * `candidates`: the pods whose controller owner reference names the Sandbox (the cache's `podsOf`), of which
 * identity picks one or none.
 */
export function claimDecision(
  sandbox: DeliverySandbox,
  candidates: readonly DeliveryPod[],
  settings: ClaimSettings,
): ClaimDecision {
  const annotations = sandbox.metadata?.annotations ?? {};
  const inputs = inputsOf(sandbox, candidates, settings);
  const claimed = isClaimed(sandbox);
  const identity = identifyPod(sandbox, candidates, settings);
  if (identity.kind === 'none') return { inputs, kind: 'wait', why: 'no-pod' };
  if (identity.kind === 'undecided') {
    const warn = (claimed && sandbox.spec?.paused !== true) || !TRANSIENT_CASES.has(identity.case);
    return { inputs, kind: 'held', case: identity.case, podUid: identity.podUid, reason: identity.reason, warn };
  }
  const { pod, podUid, address } = identity;
  if (recordedStatus(pod).wrapped.length === 0) return { inputs, kind: 'wait', why: 'not-wrapped' };
  // Whatever the runtime URL says, only a pod that runs, with an IP of its own, is the Sandbox's pod.
  if (address === undefined) return { inputs, kind: 'wait', why: 'no-address' };

  const request = annotations[INIT_RUNTIME_REQUEST];
  const hasRequest = typeof request === 'string' && request !== '';

  const base = runtimeBase(annotations, address, settings);
  if (base.kind === 'refused') return { inputs, kind: 'refused', podUid, event: base.event, reason: base.reason };

  // An unclaimed pod is only ever cleared, with its last claim's token (kept in memory by every replica).
  if (!claimed)
    return {
      inputs,
      kind: 'unclaimed',
      podUid,
      endpoint: { url: base.url, tlsAgent: base.tlsAgent, accessToken: undefined },
      containers: wrappedInstances(pod),
    };
  const token = claimToken(sandbox);
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
    const reason = `the access token (${RUNTIME_ACCESS_TOKEN}, ${LEGACY_ACCESS_TOKEN} or accessToken) is not printable ASCII`;
    return refused(inputs, podUid, 'EnvRequestRefused', reason);
  }
  const endpoint: RuntimeEndpoint = { url: base.url, tlsAgent: base.tlsAgent, accessToken: token };

  if (hasRequest && request.length > MAX_REQUEST_CHARS)
    return refused(
      inputs,
      podUid,
      'EnvRequestRefused',
      `${INIT_RUNTIME_REQUEST} is longer than ${MAX_REQUEST_CHARS} characters`,
    );
  let pairs: [string, string][];
  let content: string;
  try {
    pairs = hasRequest ? parseEnvJson(request, `annotation ${INIT_RUNTIME_REQUEST}`) : [];
    content = renderEnvFile(pairs);
  } catch (error) {
    // EnvFileError messages name fields and types, never values.
    if (error instanceof EnvFileError) return refused(inputs, podUid, 'EnvRequestRefused', error.message);
    throw error;
  }
  return {
    inputs,
    kind: 'deliver',
    target: {
      podUid,
      endpoint,
      content,
      marker: markerOf(content),
      variableCount: pairs.length,
      empty: !hasRequest,
      claimedAtMs: claimTime(annotations[CLAIM_TIMESTAMP]),
      containers: wrappedInstances(pod),
    },
  };
}

/** .env_ready's content: the digest of env.sh, so it tells which content was made ready without holding it. */
export function markerOf(content: string): string {
  return `sha256:${createHash('sha256').update(content).digest('hex')}\n`;
}

/** The inputs of a decision: every annotation, label and field it reads, and the TLS bundle's version. */
function inputsOf(sandbox: DeliverySandbox, candidates: readonly DeliveryPod[], settings: ClaimSettings): string {
  const annotations = sandbox.metadata?.annotations ?? {};
  const read = DELIVERY_ANNOTATIONS.map((name) => annotations[name] ?? null);
  const info = sandbox.status?.podInfo;
  const tls = settings.tls.kind === 'ok' ? `v${settings.tls.version}` : settings.tls.kind;
  return createHash('sha256')
    .update(
      JSON.stringify([
        ...read,
        sandbox.metadata?.labels?.[SANDBOX_CLAIMED] ?? null,
        info?.podUID ?? null,
        sandbox.spec?.paused === true,
        // A wrapped container's restart is an input: a recycled pod's next claim waits for it (recycle.ts).
        [...candidates].sort(byUid).map((pod) => [...podFacts(pod), wrappedInstances(pod)]),
        tls,
        settings.trustRuntimeUrl,
        settings.requireTls,
        settings.allowHostNetwork,
        settings.runtimePort,
      ]),
    )
    .digest('hex');
}

/** Long enough for any real reason; a hostile variable name of 200 KiB must not fill a log line or an Event. */
const MAX_REASON_CHARS = 300;

function refused(inputs: string, podUid: string, event: RefusalReason, reason: string): ClaimDecision {
  const text = reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)}...` : reason;
  return { inputs, kind: 'refused', podUid, event, reason: text };
}

function claimTime(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = Date.parse(raw);
  return Number.isFinite(ms) ? ms : undefined;
}
