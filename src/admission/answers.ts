/**
 * The answers to a review, by named constructors (`allowed`, `patched`, `denied`), as controller-runtime builds
 * its admission responses. Each builds the AdmissionReview response and the log/metrics summary together from
 * the same facts, so the two cannot disagree; `reviewBytes` turns the answer into the bytes the server sends.
 */
import { statusReason, type Failure } from '../errors/index.js';
import type { SkipReason } from '../injection/index.js';
import type { AdmissionResponse, AdmissionReview, AdmissionReviewRequest } from '../kube-shapes/admission-review.js';
import { spliceAscii } from '../json/fast-json.js';
import { limitWarnings, oneLine } from './warnings.js';

export type Decision = 'injected' | 'unchanged' | 'denied';

export interface AdmissionSummary {
  uid: string;
  namespace: string | undefined;
  /** The pod's name, or its generateName while it has none yet (`podName`, sandbox-owner.ts). */
  pod: string | undefined;
  runtimes: string[];
  decision: Decision;
  /** Runtimes this admission found already in the pod. */
  present: string[];
  skipped: { runtime: string; reason: SkipReason }[];
  patchBytes: number;
  warnings: number;
  /** The warnings answered, each whole (the answer cuts them to kube-apiserver's advised length). */
  warningMessages: string[];
  /** What Auto cannot hold until the claim, whole, whether or not it was answered as warnings. */
  advice: string[];
  /** For a denial: its catalogue code (src/errors/) and message. */
  code?: string;
  message?: string;
}

export type ReviewOutcome =
  { kind: 'response'; review: AdmissionReview; summary: AdmissionSummary } | { kind: 'bad-request'; message: string };

/** What the review has learnt by the time it answers; each step adds to it. */
export interface ReviewFacts {
  readonly review: AdmissionReviewRequest;
  readonly namespace: string | undefined;
  readonly pod?: string;
  /** Who the warnings are about, e.g. `Sandbox ns/name` (sandbox-owner.ts). */
  readonly subject?: string;
  readonly runtimes?: readonly string[];
  readonly present?: readonly string[];
  readonly skipped?: AdmissionSummary['skipped'];
  readonly warnings?: readonly string[];
  readonly advice?: readonly string[];
}

/** Admitted as it is. */
export function allowed(facts: ReviewFacts): ReviewOutcome {
  return answer(facts, { uid: facts.review.request.uid, allowed: true }, 'unchanged', 0);
}

/** Admitted with a JSON patch (base64); `decision` says whether it injected a runtime or only recorded status. */
export function patched(facts: ReviewFacts, patch: string, decision: 'injected' | 'unchanged'): ReviewOutcome {
  const response: AdmissionResponse = { uid: facts.review.request.uid, allowed: true, patchType: 'JSONPatch', patch };
  return answer(facts, response, decision, patch.length);
}

/** Refused with a catalogue failure: its status, and the Kubernetes reason the catalogue gives that status. */
export function denied(facts: ReviewFacts, { code, status, message }: Failure): ReviewOutcome {
  const response: AdmissionResponse = {
    uid: facts.review.request.uid,
    allowed: false,
    status: { code: status, message, reason: statusReason(status) },
  };
  return answer(facts, response, 'denied', 0, { code, message });
}

function answer(
  facts: ReviewFacts,
  response: AdmissionResponse,
  decision: Decision,
  patchBytes: number,
  denial?: Pick<Failure, 'code' | 'message'>,
): ReviewOutcome {
  const { subject } = facts;
  const about = (line: string): string => oneLine(subject === undefined ? line : `${subject}: ${line}`);
  const warningMessages = (facts.warnings ?? []).map(about);
  const warnings = limitWarnings(warningMessages);
  const withWarnings: AdmissionResponse = warnings.length > 0 ? { ...response, warnings } : response;
  return {
    kind: 'response',
    review: { apiVersion: facts.review.apiVersion, kind: 'AdmissionReview', response: withWarnings },
    summary: {
      uid: response.uid,
      namespace: facts.namespace,
      pod: facts.pod,
      runtimes: [...(facts.runtimes ?? [])],
      decision,
      present: [...(facts.present ?? [])],
      skipped: [...(facts.skipped ?? [])],
      patchBytes,
      warnings: warnings.length,
      warningMessages,
      advice: (facts.advice ?? []).map(about),
      ...(denial === undefined ? {} : { code: denial.code, message: denial.message }),
    },
  };
}

/**
 * The review as the UTF-8 bytes the server sends: one buffer, so its length is known without measuring a string
 * and the socket sends it without encoding it again. The base64 patch, by far the largest field, is spliced in
 * after the text of the rest.
 */
export function reviewBytes(review: AdmissionReview): Buffer {
  const response = review.response;
  if (response?.patch === undefined) return Buffer.from(JSON.stringify(review));
  const { patch, ...rest } = response;
  const text = JSON.stringify({ apiVersion: review.apiVersion, kind: review.kind, response: rest });
  // `response` is the review's last member: the text ends with its closing brace and the review's.
  return spliceAscii(`${text.slice(0, -2)},"patch":"`, patch, '"}}');
}
