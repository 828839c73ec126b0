import type { Operation } from 'fast-json-patch';
import { stringify } from 'yaml';
import type { ConfigSnapshot } from '../../config/injection-config.js';
import type { RuntimeSelection } from '../../sandbox/runtime-selection.js';
import { podName } from '../../sandbox/owner.js';
import { reviewAdmission, type Decision, type ReviewDeps } from '../../admission/review.js';
import { autoWarnings, wrappedWithoutInstaller, type Pod, type SkipReason } from '../../injection/index.js';
// The status annotation's one reader; injection/index.ts does not re-export it and the core is not ours to edit.
import { recordedStatus, type RecordedStatus } from '../../sandbox/injection-status.js';
import { podCreateReview } from '../../kube-shapes/pod-create-review.js';
import { CliError } from '../io.js';
import { applyResponsePatch, decodePatch } from '../pod-review.js';
import type { DeliveryExplanation } from './delivery-facts.js';
import { unifiedDiff } from './line-diff.js';
import type { WebhookVerdict } from './webhook-match.js';

/** Whether kube-apiserver would send the pod to the webhook, as far as explain could tell. */
export type WebhookCheck =
  | { state: 'offline' }
  | { state: 'not-installed'; configuration: string }
  | { state: 'checked'; configuration: string; selected: boolean; webhooks: WebhookVerdict[]; notes: string[] };

export type RuntimeFate =
  | { runtime: string; fate: 'injected' | 'present'; earlier: boolean }
  | { runtime: string; fate: 'skipped'; reason: SkipReason; message: string; earlier: boolean }
  /** No record: the ConfigMap does not exist, or the pod is denied. */
  | { runtime: string; fate: 'none'; why: string };

export interface Explanation {
  /** `namespace/name` of the pod (its generateName when it has no name yet). */
  pod: string;
  /** Where the explained pod came from: a stored pod, a file, or the pod a Sandbox's controller would create. */
  origin: string;
  notes: string[];
  webhook: WebhookCheck;
  /** Runtimes and policy with where each came from; absent when the pod is denied before they are chosen. */
  selection?: { runtimes: string[]; runtimesFrom: string; policy: string; policyFrom?: string };
  configMap: { name: string; exists: boolean; keys: KeyReport[] };
  decision: Decision;
  denial?: { code: string; status: number; message: string };
  runtimes: RuntimeFate[];
  wrapped: string[];
  /**
   * traffic-proxy's health-probe rewrite, as the status annotation records it: the proxy, and each probe or hook
   * (`container/probe`) that goes through it. Absent when the rewrite did not apply.
   */
  healthProbeRewrite?: { proxy: string; probes: string[] };
  /** The config revision: recorded on the pod, recorded by this review, and what the config in force gives. */
  revision: RevisionReport;
  /** With --sandbox: the state deliver-env gives the Sandbox's pod (src/deliver/pools/pool-pods.ts). */
  poolPod?: PoolPodReport;
  /** The warnings answered, each whole (the answer itself cuts them at 120 characters). */
  warnings: string[];
  /** What Auto cannot hold until the claim; answered as warnings too when the server runs --warn-unwrapped. */
  advice: string[];
  /** The JSON patch the webhook answers with, and the same change as a unified diff of the pod's YAML. */
  patch: Operation[];
  diff: string;
  /** deliver-env's side of the Sandbox (`--sandbox` in a cluster only; delivery.ts). */
  delivery?: DeliveryExplanation;
}

export interface RevisionReport {
  /** What the pod carried before the review; absent when it had no record, or one without a revision. */
  recorded?: string;
  /** What the status holds after the review (the recorded one is kept). */
  admitted?: string;
  /** What the config in force gives for all the asked runtimes; absent when one has no usable key. */
  current?: string;
}

export interface PoolPodReport {
  /** `fine`, `missing`, `stale`, or `not judged`. */
  state: string;
  reason: string;
  /** The Sandbox's SandboxSet, `namespace/name`, when it is in a pool. */
  pool?: string;
}

export interface ExplainInput {
  pod: Pod;
  namespace: string;
  origin: string;
  notes?: string[];
  webhook: WebhookCheck;
  /** The same dependencies the server's review gets, built from files or one-off reads of the cluster. */
  deps: ReviewDeps;
  poolPod?: PoolPodReport;
}

/** Runs the server's review on the pod's creation and reads the answer back as an explanation. */
export async function explainPod(input: ExplainInput): Promise<Explanation> {
  const { pod, namespace, deps } = input;
  let selection: RuntimeSelection | undefined;
  // The review's own selection, kept on its way through, so the sources shown are the ones the review used.
  const selectRuntimes: ReviewDeps['selectRuntimes'] = async (...args) =>
    (selection = await deps.selectRuntimes(...args));
  const snapshot = deps.config();
  const outcome = await reviewAdmission(podCreateReview(pod, { uid: 'sandbox-injector-explain', namespace }), {
    ...deps,
    config: () => snapshot,
    selectRuntimes,
  });
  if (outcome.kind === 'bad-request') throw new CliError(outcome.message);
  const { response } = outcome.review;
  const { summary } = outcome;
  const chosen = selection?.ok === true ? selection : undefined;
  const asked = chosen?.runtimes ?? [];
  const mutated = response?.allowed === true ? applyResponsePatch(pod, response.patch) : pod;
  const denial =
    summary.code === undefined
      ? undefined
      : { code: summary.code, status: response?.status?.code ?? 0, message: summary.message ?? '' };
  const name = podName(pod.metadata) ?? '';
  return {
    pod: `${namespace}/${name}`,
    origin: input.origin,
    notes: [
      ...(input.notes ?? []),
      ...(deps.wrapper === undefined && wrappedWithoutInstaller(mutated) ? [autoWarnings.noWrapperImageNote()] : []),
    ],
    webhook: input.webhook,
    ...(chosen === undefined
      ? {}
      : {
          selection: {
            runtimes: chosen.runtimes,
            runtimesFrom: chosen.source,
            policy: chosen.policy,
            ...(chosen.policySource === undefined ? {} : { policyFrom: chosen.policySource }),
          },
        }),
    configMap: configMapReport(snapshot, asked),
    decision: summary.decision,
    ...(denial === undefined ? {} : { denial }),
    runtimes: fates(asked, recordedStatus(pod), recordedStatus(mutated), whyNoRecord(snapshot, denial)),
    wrapped: [...recordedStatus(mutated).wrapped],
    ...probeRewriteOf(recordedStatus(mutated)),
    revision: revisionReport(recordedStatus(pod).revision, recordedStatus(mutated).revision, snapshot, asked),
    ...(input.poolPod === undefined ? {} : { poolPod: input.poolPod }),
    warnings: summary.warningMessages,
    advice: summary.advice,
    patch: decodePatch(response?.patch),
    diff: unifiedDiff(asYaml(pod), asYaml(mutated), {
      from: `pod ${namespace}/${name} as created`,
      to: `pod ${namespace}/${name} as admitted`,
    }),
  };
}

function probeRewriteOf(status: RecordedStatus): Pick<Explanation, 'healthProbeRewrite'> {
  const rewrite = status.healthProbeRewrite;
  return rewrite === undefined ? {} : { healthProbeRewrite: { proxy: rewrite.proxy, probes: [...rewrite.probes] } };
}

/** Long values (the status annotation) stay on one line, so each change is one diff line. */
function asYaml(pod: Pod): string {
  return stringify(pod, { lineWidth: 0 });
}

function revisionReport(
  recorded: string | undefined,
  admitted: string | undefined,
  snapshot: ConfigSnapshot,
  asked: readonly string[],
): RevisionReport {
  const current = snapshot.present && asked.length > 0 ? snapshot.revision(asked) : undefined;
  return {
    ...(recorded === undefined ? {} : { recorded }),
    ...(admitted === undefined ? {} : { admitted }),
    ...(current === undefined ? {} : { current }),
  };
}

function configMapReport(snapshot: ConfigSnapshot, asked: readonly string[]): Explanation['configMap'] {
  if (!snapshot.present) return { name: snapshot.name, exists: false, keys: [] };
  return { name: snapshot.name, exists: true, keys: asked.map((key) => keyReport(snapshot, key)) };
}

function whyNoRecord(snapshot: ConfigSnapshot, denial: Explanation['denial']): string {
  if (denial !== undefined) return `the pod is denied (${denial.code})`;
  if (!snapshot.present) return `ConfigMap ${snapshot.name} does not exist: the pod is admitted unchanged`;
  return 'not recorded';
}

/** Each asked runtime's fate as the status annotation after the review records it. */
function fates(asked: readonly string[], before: RecordedStatus, after: RecordedStatus, why: string): RuntimeFate[] {
  const earlier = (runtime: string): boolean =>
    before.injected.includes(runtime) ||
    before.present.includes(runtime) ||
    before.skipped.some((s) => s.runtime === runtime);
  return asked.map((runtime): RuntimeFate => {
    if (after.injected.includes(runtime)) return { runtime, fate: 'injected', earlier: earlier(runtime) };
    if (after.present.includes(runtime)) return { runtime, fate: 'present', earlier: earlier(runtime) };
    const skip = after.skipped.find((s) => s.runtime === runtime);
    if (skip !== undefined)
      return { runtime, fate: 'skipped', reason: skip.reason, message: skip.message, earlier: earlier(runtime) };
    return { runtime, fate: 'none', why };
  });
}

/**
 * A ConfigMap key as the review reads it: `valid`; `last-valid` (the current value is bad and an earlier valid
 * version is used, with a warning); `invalid` (bad and never seen valid: a runtime asking for it is denied);
 * `missing` (no key, or an empty one: also denied).
 */
export type KeyState = 'valid' | 'last-valid' | 'invalid' | 'missing';

export interface KeyReport {
  key: string;
  state: KeyState;
  /** Why the current value is bad, for `last-valid` and `invalid`. */
  error?: string;
}

export function keyReport(snapshot: ConfigSnapshot & { present: true }, key: string): KeyReport {
  const entry = snapshot.entries.get(key);
  if (entry === undefined) return { key, state: 'missing' };
  if (entry.error === undefined) return { key, state: 'valid' };
  return { key, state: entry.config === undefined ? 'invalid' : 'last-valid', error: entry.error };
}
