/**
 * Every error and denial sandbox-injector gives, listed once: a stable code (one prefix, `SI_`), the HTTP or
 * admission status it goes out with, and how its message is built. Code elsewhere builds failures only from
 * here, as a value (`ROW(...)`) or as an error to throw (`new ROW.Error(...)`), so a code means one thing
 * everywhere (log lines, Events, the denials counter, docs/errors.md). One file per kind:
 *
 * - denial (denials.ts): an AdmissionReview answered `allowed: false`, with this status in
 *   `response.status.code`;
 * - http (request-refusals.ts): a request refused before there is a review to answer, with this HTTP status;
 * - startup (startup-errors.ts): the process refuses to start (its `status` is the exit status), or refuses a
 *   file it reads;
 * - delivery (delivery-failures.ts): deliver-env could not deliver a claim, or clear one; no status.
 *
 * Not here: what the CLI prints (CliError, UsageError, EnvFileError: a message and an exit status), and the
 * errors one module hands another and never lets out as they are (a Lease call's timeout, a silent watch, one
 * request to a runtime, the certificate policy's guard against its library's callers).
 */
import { DELIVERY_FAILURES } from './delivery-failures.js';
import { DENIALS } from './denials.js';
import type { FailureSpec, FailureStatus } from './failure.js';
import { HTTP_ERRORS } from './request-refusals.js';
import { STARTUP_ERRORS } from './startup-errors.js';

export { CatalogueError } from './failure.js';
export type { Failure, FailureKind, FailureSpec, FailureStatus } from './failure.js';
export { DELIVERY_FAILURES, DENIALS, HTTP_ERRORS, STARTUP_ERRORS };

/**
 * The Kubernetes Status reason (metav1.StatusReason) a denial goes out with, from its status: 5xx is the
 * webhook's own failure, and any 4xx without a reason of its own is the pod's fault.
 */
export function statusReason(status: number): string {
  if (status >= 500) return 'InternalError';
  return STATUS_REASONS.get(status) ?? 'BadRequest';
}

const STATUS_REASONS: ReadonlyMap<number, string> = new Map([
  [403, 'Forbidden'],
  [404, 'NotFound'],
]);

/** What the docs list of each failure. */
export type CatalogueEntry = Pick<FailureSpec<never[], FailureStatus>, 'code' | 'status' | 'kind' | 'meaning'>;

/** Every failure, for the docs test; codes are unique (checked there too). */
export const CATALOGUE: readonly CatalogueEntry[] = [
  ...Object.values(DENIALS),
  ...Object.values(HTTP_ERRORS),
  ...Object.values(STARTUP_ERRORS),
  ...Object.values(DELIVERY_FAILURES),
];
