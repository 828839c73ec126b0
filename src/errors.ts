/**
 * Every error and denial sandbox-injector gives, listed once: a stable code (one prefix, `SI_`), the HTTP or
 * admission status it goes out with, and how its message is built. Code elsewhere builds failures only from
 * here, so a code means one thing everywhere (log lines, the denials counter, docs/errors.md).
 *
 * - denial: an AdmissionReview answered `allowed: false`, with this status in `response.status.code`;
 * - http: a request refused before there is a review to answer, with this HTTP status;
 * - startup: the process refuses to start (its `status` is the exit status), or refuses a file it reads.
 */
import { DENIALS } from './errors/denials.js';
import type { FailureSpec } from './errors/failure.js';
import { HTTP_ERRORS } from './errors/http-errors.js';
import { STARTUP_ERRORS } from './errors/startup-errors.js';

export type { Failure, FailureKind, FailureSpec } from './errors/failure.js';
export { DENIALS, HTTP_ERRORS, STARTUP_ERRORS };

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
export type CatalogueEntry = Pick<FailureSpec<never[]>, 'code' | 'status' | 'kind' | 'meaning'>;

/** Every failure, for the docs test; codes are unique (checked there too). */
export const CATALOGUE: readonly CatalogueEntry[] = [
  ...Object.values(DENIALS),
  ...Object.values(HTTP_ERRORS),
  ...Object.values(STARTUP_ERRORS),
];
