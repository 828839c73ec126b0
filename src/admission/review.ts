import {
  injectRuntimes,
  type JsonPointers,
  type Pod,
  type PostStartConflict,
  type RequestedRuntime,
  type WrapperInstaller,
} from '../injection/index.js';
import type { AdmissionRequest } from '../kube-shapes/admission-review.js';
import { encodePatch } from './patch.js';
import type { ConfigSnapshot } from '../config/injection-config.js';
import type { RuntimeSelection } from '../sandbox/runtime-selection.js';
import { DENIALS, type Failure } from '../errors/index.js';
import { allowed, denied, patched, type ReviewFacts, type ReviewOutcome } from './answers.js';
import { podOverLimits } from './pod-limits.js';
import { podName, warningSubject } from '../sandbox/owner.js';
import { describePodError, describeReviewError, validatePod, validateReview } from './schema.js';

export interface ReviewDeps {
  /** Current injection config snapshot (cheap, no I/O). */
  config(): ConfigSnapshot;
  /** Where runtimes and policy come from: pod annotations offline, the owning Sandbox in cluster mode. */
  selectRuntimes(pod: Pod, request: AdmissionRequest): RuntimeSelection | Promise<RuntimeSelection>;
  /** Installs run_with_envs.sh from an init container when commands are wrapped. */
  wrapper?: WrapperInstaller;
  /** A postStart hook on both the main container and agent-runtime's config: skip the runtime, or chain them. */
  postStartConflict?: PostStartConflict;
  /** Answer what Auto cannot hold until the claim (network probes, no command) as warnings too. */
  warnUnwrapped?: boolean;
  /** The patch's pointers, kept from one review to the next: the server's app and each CLI command own one. */
  pointers?: JsonPointers;
}

export type { AdmissionSummary, Decision, ReviewOutcome } from './answers.js';
export { JsonPointers } from '../injection/index.js';

/**
 * The one path from an AdmissionReview body to its answer, shared by the server and the CLI. `text`, the body's
 * JSON text when there is one, lets the size rule measure a large pod's maps without enumerating them.
 */
export async function reviewAdmission(body: unknown, deps: ReviewDeps, text?: string): Promise<ReviewOutcome> {
  if (!validateReview(body)) return { kind: 'bad-request', message: describeReviewError(body, validateReview.errors) };
  const request = body.request;
  const received: ReviewFacts = { review: body, namespace: request.namespace };

  if (!isPodCreate(request)) return allowed(received);
  const pod = request.object;
  const problem = podOverLimits(pod, text);
  if (problem?.kind === 'too-large') return denied(received, DENIALS.podTooLarge(problem.message));
  if (problem?.kind === 'malformed') return denied(received, DENIALS.podMalformed(problem.message));
  // Checked before anything reads the pod: kube-apiserver only sends well-typed pods, so a failure here is a
  // hand-made or corrupted review, and it must be refused rather than crash a reader or get a broken patch.
  if (!validatePod(pod)) return denied(received, DENIALS.podMalformed(describePodError(validatePod.errors)));
  const namespace = request.namespace ?? pod.metadata.namespace;
  const name = podName(pod.metadata, request.name);
  const about: ReviewFacts = { ...received, namespace, pod: name, subject: warningSubject(pod, namespace, name) };

  const selection = await deps.selectRuntimes(pod, request);
  if (!selection.ok) return denied(about, selection.denial);
  const asked: ReviewFacts = { ...about, runtimes: selection.runtimes };
  if (selection.runtimes.length === 0) return allowed(asked);

  const config = deps.config();
  if (!config.present) return allowed(asked);
  const resolved = resolveRuntimes(selection.runtimes, config);
  if (!resolved.ok) return denied(asked, resolved.denial);

  const result = injectRuntimes(pod, {
    runtimes: resolved.runtimes,
    policy: selection.policy,
    allConfigs: config.valid,
    wrapper: deps.wrapper,
    postStartConflict: deps.postStartConflict,
    pointers: deps.pointers,
    revision: config.revision,
  });
  const { report } = result;
  const injected: ReviewFacts = {
    ...asked,
    present: report.present,
    skipped: report.skipped.map(({ runtime, reason }) => ({ runtime, reason })),
    warnings: [...resolved.warnings, ...report.warnings, ...(deps.warnUnwrapped === true ? report.advice : [])],
    advice: report.advice,
  };
  if (!result.changed) return allowed(injected);
  // A patch that only records the status annotation (runtimes found present, all skipped) injected nothing.
  const decision = report.injected.length > 0 || report.wrapped.length > 0 ? 'injected' : 'unchanged';
  return patched(injected, encodePatch(result.operations), decision);
}

function isPodCreate(request: AdmissionRequest): boolean {
  return (
    request.operation === 'CREATE' &&
    request.kind.group === '' &&
    request.kind.kind === 'Pod' &&
    (request.subResource === undefined || request.subResource === '')
  );
}

type Resolution = { ok: true; runtimes: RequestedRuntime[]; warnings: string[] } | { ok: false; denial: Failure };

/** Every asked runtime must have a usable key; one that falls back to its last valid version says so. */
function resolveRuntimes(names: readonly string[], config: ConfigSnapshot & { present: true }): Resolution {
  const runtimes: RequestedRuntime[] = [];
  const warnings: string[] = [];
  const problems: string[] = [];
  for (const name of names) {
    const entry = config.entries.get(name);
    if (entry === undefined) {
      problems.push(`runtime "${name}" has no key in ConfigMap ${config.name}`);
    } else if (entry.config === undefined) {
      problems.push(
        `runtime "${name}": ConfigMap ${config.name} key "${name}" is invalid: ${entry.error ?? 'unknown'}`,
      );
    } else {
      if (entry.error !== undefined) {
        warnings.push(`runtime "${name}": key "${name}" is invalid, using its last valid version: ${entry.error}`);
      }
      runtimes.push({ name, config: entry.config });
    }
  }
  if (problems.length > 0) return { ok: false, denial: DENIALS.runtimeConfigUnusable(problems) };
  return { ok: true, runtimes, warnings };
}
