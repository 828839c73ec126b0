import {
  injectRuntimes,
  type Pod,
  type PostStartConflict,
  type RequestedRuntime,
  type SkipReason,
  type WrapperInstaller,
} from '../injection/index.js';
import { encodePatch } from './patch.js';
import type { ConfigSnapshot, RuntimeSelection } from './ports.js';
import { DENIALS, type Failure } from '../errors.js';
import { podOverLimits } from './pod-limits.js';
import { warningSubject } from './sandbox-owner.js';
import { describePodError, describeReviewError } from './schema-errors.js';
import { validatePod, validateReview } from './schema.js';
import type { AdmissionRequest, AdmissionResponse, AdmissionReview, AdmissionReviewRequest } from './types.js';
import { limitWarnings } from './warnings.js';

export interface ReviewDeps {
  /** Current injection config snapshot (cheap, no I/O). */
  config(): ConfigSnapshot;
  /** Where runtimes and policy come from: pod annotations offline, the owning Sandbox in cluster mode. */
  selectRuntimes(pod: Pod, request: AdmissionRequest): RuntimeSelection | Promise<RuntimeSelection>;
  /** Installs run_with_envs.sh from an init container when commands are wrapped. */
  wrapper?: WrapperInstaller;
  /** A postStart hook on both the main container and agent-runtime's config: skip the runtime, or chain them. */
  postStartConflict?: PostStartConflict;
}

export type Decision = 'injected' | 'unchanged' | 'denied';

export interface AdmissionSummary {
  uid: string;
  namespace: string | undefined;
  /** The pod's name, or its generateName while it has none yet. */
  pod: string | undefined;
  runtimes: string[];
  decision: Decision;
  /** Runtimes this admission found already in the pod. */
  present: string[];
  skipped: { runtime: string; reason: SkipReason }[];
  patchBytes: number;
  warnings: number;
  /** For a denial: its catalogue code (src/errors.ts) and message. */
  code?: string;
  message?: string;
}

export type ReviewOutcome =
  | { kind: 'response'; review: AdmissionReview; summary: AdmissionSummary }
  | { kind: 'bad-request'; message: string };

/**
 * The one path from an AdmissionReview body to its answer, shared by the server and the CLI. `text`, the body's
 * JSON text when there is one, lets the size rule measure a large pod's maps without enumerating them.
 */
export async function reviewAdmission(body: unknown, deps: ReviewDeps, text?: string): Promise<ReviewOutcome> {
  if (!validateReview(body)) return { kind: 'bad-request', message: describeReviewError(body, validateReview.errors) };
  const request = body.request;
  const answer = new Answer(body);

  if (!isPodCreate(request)) return answer.allow();
  const pod = request.object;
  const problem = podOverLimits(pod, text);
  if (problem?.kind === 'too-large') return answer.deny(DENIALS.podTooLarge(problem.message));
  if (problem?.kind === 'malformed') return answer.deny(DENIALS.podMalformed(problem.message));
  // Checked before anything reads the pod: kube-apiserver only sends well-typed pods, so a failure here is a
  // hand-made or corrupted review, and it must be refused rather than crash a reader or get a broken patch.
  if (!validatePod(pod)) return answer.deny(DENIALS.podMalformed(describePodError(validatePod.errors)));
  answer.describePod(pod);

  const selection = await deps.selectRuntimes(pod, request);
  if (!selection.ok) return answer.deny(selection.denial);
  answer.runtimes = selection.runtimes;
  if (selection.runtimes.length === 0) return answer.allow();

  const config = deps.config();
  if (!config.present) return answer.allow();
  const resolved = resolveRuntimes(selection.runtimes, config);
  if (!resolved.ok) return answer.deny(resolved.denial);

  const result = injectRuntimes(pod, {
    runtimes: resolved.runtimes,
    policy: selection.policy,
    allConfigs: config.valid,
    wrapper: deps.wrapper,
    postStartConflict: deps.postStartConflict,
  });
  const { report } = result;
  answer.present = report.present;
  answer.skipped = report.skipped.map(({ runtime, reason }) => ({ runtime, reason }));
  answer.warnings.push(...resolved.warnings, ...report.warnings);
  if (!result.changed) return answer.allow();
  // A patch that only records the status annotation (runtimes found present, all skipped) injected nothing.
  const injected = report.injected.length > 0 || report.wrapped.length > 0;
  return answer.allow(encodePatch(result.operations), injected ? 'injected' : 'unchanged');
}

function isPodCreate(request: AdmissionRequest): boolean {
  return (
    request.operation === 'CREATE' &&
    request.kind.group === '' &&
    request.kind.kind === 'Pod' &&
    (request.subResource === undefined || request.subResource === '')
  );
}

type Resolution =
  | { ok: true; runtimes: RequestedRuntime[]; warnings: string[] }
  | { ok: false; denial: Failure };

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
      problems.push(`runtime "${name}": ConfigMap ${config.name} key "${name}" is invalid: ${entry.error ?? 'unknown'}`);
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

/** Builds the response and the log/metrics summary side by side, so the two cannot disagree. */
class Answer {
  runtimes: string[] = [];
  present: string[] = [];
  skipped: AdmissionSummary['skipped'] = [];
  readonly warnings: string[] = [];
  private namespace: string | undefined;
  private podName: string | undefined;
  private subject: string | undefined;

  constructor(private readonly review: AdmissionReviewRequest) {
    this.namespace = review.request.namespace;
  }

  describePod(pod: Pod): void {
    this.namespace = this.namespace ?? pod.metadata.namespace;
    this.podName = pod.metadata.name ?? pod.metadata.generateName ?? this.review.request.name;
    this.subject = warningSubject(pod, this.namespace);
  }

  allow(patch?: string, decision: Decision = patch === undefined ? 'unchanged' : 'injected'): ReviewOutcome {
    const response: AdmissionResponse = { uid: this.review.request.uid, allowed: true };
    if (patch !== undefined) {
      response.patchType = 'JSONPatch';
      response.patch = patch;
    }
    return this.finish(response, decision, patch?.length ?? 0);
  }

  deny({ code, status, message }: Failure): ReviewOutcome {
    const reason = status >= 500 ? 'InternalError' : status === 403 ? 'Forbidden' : status === 404 ? 'NotFound' : 'BadRequest';
    const response: AdmissionResponse = {
      uid: this.review.request.uid,
      allowed: false,
      status: { code: status, message, reason },
    };
    return this.finish(response, 'denied', 0, { code, message });
  }

  private finish(
    response: AdmissionResponse,
    decision: Decision,
    patchBytes: number,
    denial?: Pick<Failure, 'code' | 'message'>,
  ): ReviewOutcome {
    const subject = this.subject;
    const lines = subject === undefined ? this.warnings : this.warnings.map((warning) => `${subject}: ${warning}`);
    const warnings = limitWarnings(lines);
    if (warnings.length > 0) response.warnings = warnings;
    return {
      kind: 'response',
      review: { apiVersion: this.review.apiVersion, kind: 'AdmissionReview', response },
      summary: {
        uid: response.uid,
        namespace: this.namespace,
        pod: this.podName,
        runtimes: this.runtimes,
        decision,
        present: this.present,
        skipped: this.skipped,
        patchBytes,
        warnings: warnings.length,
        ...(denial === undefined ? {} : { code: denial.code, message: denial.message }),
      },
    };
  }
}
