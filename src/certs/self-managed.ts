/**
 * Self-managed certificates: the webhook makes and renews its own CA and serving certificate, with no
 * cert-manager in the cluster. This module turns the options into a policy and starts the two halves: what
 * one pass does (certificate-sync.ts) and when passes run (sync-schedule.ts).
 *
 * - One Secret holds everything (see state.ts). Replicas started together race to create it; the loser of
 *   the race gets 409 Conflict, reads the winner's Secret and uses it. Renewals update the Secret with its
 *   resourceVersion, so of two replicas renewing at once one wins and the other adopts its result
 *   (retry-on-conflict.ts).
 * - Each replica writes the Secret's serving pair and CA into `dir` with an atomic `..data` swap
 *   (atomic-dir.ts); the server's directory watcher reloads the pair from there.
 * - The MutatingWebhookConfiguration's caBundle follows the Secret's trust bundle (webhook-bundle.ts):
 *   during a CA rotation it holds both CAs, so no client meets a certificate it does not trust.
 *
 * How a replica learns about another's renewal: it re-reads the Secret every `pollIntervalMs` (default one
 * minute). A watch would need list/watch rights on Secrets, while the poll needs only `get` of the one
 * Secret, and nothing is urgent: a renewed serving certificate leaves the previous one valid for weeks, and
 * a rotated CA stays in the bundle, so a replica serving the superseded pair until its next poll breaks no
 * client. The same poll repairs a caBundle that was reset (the configuration re-applied or re-created).
 *
 * Failures (API unreachable, 403 while RBAC is still being applied) are logged and retried with backoff;
 * `ready` resolves once usable files are in `dir`, which is when the server can start.
 */
import { CertificateSync, certificateFiles } from './certificate-sync.js';
import { checkPolicy, type RenewalPolicy } from './plan.js';
import { serviceSubjectNames } from './pki.js';
import { startSyncSchedule } from './sync-schedule.js';
import type { KubeClients } from '../kube-client/clients.js';
import { systemClock, type Clock } from '../time/clock.js';
import type { Logger } from '../logging/logger.js';

export interface SelfManagedCertificatesOptions {
  clients: KubeClients;
  namespace: string;
  secretName: string;
  serviceName: string;
  webhookConfigName: string;
  /** Where tls.crt, tls.key and ca.crt are written (the server's --tls-cert-file/--tls-key-file point here). */
  dir: string;
  /** More names for the serving certificate; IP literals become IP SANs. */
  extraSans?: readonly string[];
  /** Serving certificate lifetime; default 365. */
  validityDays?: number;
  /** Serving certificate renewed when less than this is left; default 30. */
  renewBeforeDays?: number;
  /** CA lifetime; default 3650. */
  caValidityDays?: number;
  /** CA rotation starts when less than this is left; default 365. */
  caRenewBeforeDays?: number;
  /** Between a new CA entering the caBundle and it signing; default 10 minutes. */
  caOverlapMs?: number;
  /** How often the Secret and the webhook configuration are re-read; default 60 s. */
  pollIntervalMs?: number;
  /** Wait after a failure, doubled per failure (with jitter) up to pollIntervalMs; default 1 s. */
  retryMinMs?: number;
  /** What certificates are dated by, and what the polls and retries wait on; default systemClock. */
  clock?: Clock;
  logger?: Logger;
}

export interface SelfManagedCertificates {
  /** Resolves once `dir` holds a serving pair from the Secret; rejects only when stopped before that. */
  readonly ready: Promise<void>;
  readonly files: { certFile: string; keyFile: string; caFile: string };
  /**
   * Issues a new serving certificate now (and with `rotateCa`, starts a CA rotation: the new CA enters the
   * caBundle now and signs once `caOverlapMs` has passed, at the next poll or renewNow). Resolves when the
   * Secret, the caBundle and the files are up to date; rejects with the error when that failed.
   */
  renewNow(request?: { rotateCa?: boolean }): Promise<void>;
  /** Stops polling and waits for a pass in progress. */
  stop(): Promise<void>;
}

const DEFAULTS = {
  validityDays: 365,
  renewBeforeDays: 30,
  caValidityDays: 3650,
  caRenewBeforeDays: 365,
  caOverlapMs: 10 * 60 * 1000,
  pollIntervalMs: 60 * 1000,
  retryMinMs: 1000,
} as const;

const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export function startSelfManagedCertificates(options: SelfManagedCertificatesOptions): SelfManagedCertificates {
  const policy: RenewalPolicy = {
    names: serviceSubjectNames(options.serviceName, options.namespace, options.extraSans),
    servingValidityDays: options.validityDays ?? DEFAULTS.validityDays,
    servingRenewBeforeDays: options.renewBeforeDays ?? DEFAULTS.renewBeforeDays,
    caValidityDays: options.caValidityDays ?? DEFAULTS.caValidityDays,
    caRenewBeforeDays: options.caRenewBeforeDays ?? DEFAULTS.caRenewBeforeDays,
    caOverlapMs: options.caOverlapMs ?? DEFAULTS.caOverlapMs,
  };
  checkPolicy(policy);
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULTS.pollIntervalMs;
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const sync = new CertificateSync(options, policy, clock, logger);
  const schedule = startSyncSchedule(
    sync,
    {
      pollIntervalMs,
      retry: { minMs: Math.min(options.retryMinMs ?? DEFAULTS.retryMinMs, pollIntervalMs), maxMs: pollIntervalMs },
      random: Math.random,
      clock,
    },
    logger,
  );
  return {
    ready: schedule.ready,
    files: certificateFiles(options.dir),
    renewNow: (request = {}) => schedule.renewNow({ renewServing: true, rotateCa: request.rotateCa === true }),
    stop: () => schedule.stop(),
  };
}
