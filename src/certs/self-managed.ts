/**
 * Self-managed certificates: the webhook makes and renews its own CA and serving certificate, with no
 * cert-manager in the cluster.
 *
 * - One Secret holds everything (see state.ts). Replicas started together race to create it; the loser of
 *   the race gets 409 Conflict, reads the winner's Secret and uses it. Renewals update the Secret with its
 *   resourceVersion, so of two replicas renewing at once one wins and the other adopts its result.
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
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  ApiException,
  type V1MutatingWebhookConfiguration,
  type V1Secret,
} from '@kubernetes/client-node';
import type { KubeClients } from '../sources/kube/clients.js';
import { readAtomicDir, writeAtomicDir } from './atomic-dir.js';
import { applyPlan, checkPolicy, planIsEmpty, planRenewal, type RenewalPlan, type RenewalPolicy, type RenewalRequest } from './plan.js';
import { serviceSubjectNames } from './pki.js';
import { EMPTY_STATE, secretFromState, stateFromSecret, trustBundle, type CertState } from './state.js';
import { bundleTrusts, decideBundle } from './webhook-bundle.js';
import type { Logger } from '../util/logger.js';
import { unrefSleep } from '../util/sleep.js';


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
  /** Wait after a failure, doubled per failure up to pollIntervalMs; default 1 s. */
  retryMinMs?: number;
  now?: () => Date;
  delay?: (ms: number) => Promise<void>;
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

/** A Secret or configuration written by someone else between our read and our write: read again. */
const CONFLICT_ATTEMPTS = 5;

const FILE_NAMES = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt' } as const;

const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export class CertificateConflictError extends Error {
  override readonly name = 'CertificateConflictError';
  readonly code = 'ERR_CERT_CONFLICT';
}

interface PassOutcome {
  /** Something is not settled yet (configuration missing, files held back): look again soon. */
  retrySoon: boolean;
}

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
  const retryMinMs = Math.min(options.retryMinMs ?? DEFAULTS.retryMinMs, pollIntervalMs);
  const now = options.now ?? (() => new Date());
  const delay = options.delay ?? unrefSleep;
  const logger = options.logger ?? silentLogger;
  const files = {
    certFile: join(options.dir, FILE_NAMES.cert),
    keyFile: join(options.dir, FILE_NAMES.key),
    caFile: join(options.dir, FILE_NAMES.ca),
  };
  const sync = new CertificateSync(options, policy, now, logger);

  let stopped = false;
  let wake: () => void = () => undefined;
  const stopSignal = new Promise<void>((resolve) => {
    wake = resolve;
  });
  let markReady: () => void = () => undefined;
  let failReady: (error: Error) => void = () => undefined;
  let isReady = false;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = () => {
      isReady = true;
      resolve();
    };
    failReady = reject;
  });
  // Callers that never await `ready` must not see an unhandled rejection when stop() comes first.
  ready.catch(() => undefined);

  // One pass at a time: a renewNow() during a poll runs after it, on the Secret that poll left.
  let tail: Promise<unknown> = Promise.resolve();
  const serialized = (request: RenewalRequest): Promise<PassOutcome> => {
    const run = tail.then(async () => {
      const outcome = await sync.pass(request);
      if (!isReady && (await sync.filesPresent())) markReady();
      return outcome;
    });
    tail = run.catch(() => undefined);
    return run;
  };

  const loop = async (): Promise<void> => {
    let failures = 0;
    while (!stopped) {
      let waitMs = pollIntervalMs;
      try {
        const outcome = await serialized({});
        failures = 0;
        if (outcome.retrySoon) waitMs = Math.min(pollIntervalMs, retryMinMs * 5);
      } catch (error) {
        waitMs = Math.min(pollIntervalMs, retryMinMs * 2 ** failures);
        failures += 1;
        logger.error({ err: error, retryInMs: waitMs }, 'self-managed certificates: pass failed');
      }
      if (stopped) break;
      await Promise.race([delay(waitMs), stopSignal]);
    }
  };
  const looping = loop();

  return {
    ready,
    files,
    async renewNow(request = {}) {
      if (stopped) throw new Error('self-managed certificates are stopped');
      await serialized({ renewServing: true, rotateCa: request.rotateCa === true });
    },
    async stop() {
      stopped = true;
      wake();
      await looping;
      await tail;
      if (!isReady) failReady(new Error('self-managed certificates stopped before they were ready'));
    },
  };
}

/** One pass: make the Secret current, then the caBundle, then the files; each step reads before it writes. */
class CertificateSync {
  private readonly admission: AdmissionregistrationV1Api;
  private missingConfigLogged = false;

  constructor(
    private readonly options: SelfManagedCertificatesOptions,
    private readonly policy: RenewalPolicy,
    private readonly now: () => Date,
    private readonly logger: Logger,
  ) {
    this.admission = options.clients.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  }

  async pass(request: RenewalRequest): Promise<PassOutcome> {
    const secret = await this.currentSecret(request);
    const state = stateFromSecret(secret);
    const issuer = state.ca;
    if (issuer === undefined || state.serving === undefined) {
      // currentSecret() only returns a Secret it planned to be complete; another writer broke it since.
      throw new Error(`Secret ${this.secretRef()} has no valid CA and serving certificate after renewal`);
    }
    const config = await this.syncBundle(state, secret.metadata?.uid ?? '');
    const trusted = config === undefined || bundleTrusts(config, issuer.certPem);
    const present = await this.filesPresent();
    if (!trusted && present) {
      // Serving a certificate the caBundle does not trust would fail every admission; the files in place
      // are still trusted, so keep them until the configuration carries the new CA.
      this.logger.warn(
        { webhookConfiguration: this.options.webhookConfigName },
        'caBundle does not trust the CA of the Secret yet: keeping the current certificate files',
      );
      return { retrySoon: true };
    }
    await this.writeFiles(state);
    return { retrySoon: config === undefined || !trusted };
  }

  async filesPresent(): Promise<boolean> {
    return (await readAtomicDir(this.options.dir, Object.values(FILE_NAMES))) !== undefined;
  }

  /** The Secret as stored after this pass's renewals: created, renewed, adopted or unchanged. */
  private async currentSecret(initial: RenewalRequest): Promise<V1Secret> {
    const { namespace, secretName: name } = this.options;
    let request = initial;
    for (let attempt = 1; attempt <= CONFLICT_ATTEMPTS; attempt += 1) {
      const existing = await this.readSecret();
      const current = existing === undefined ? EMPTY_STATE : stateFromSecret(existing);
      const at = this.now();
      const plan = planRenewal(current, at, this.policy, request);
      if (existing !== undefined && planIsEmpty(plan)) return existing;

      const next = await applyPlan(current, plan, at, this.policy);
      const body = secretFromState(next, name, namespace, existing);
      try {
        const written =
          existing === undefined
            ? await this.options.clients.core.createNamespacedSecret({ namespace, body })
            : await this.options.clients.core.replaceNamespacedSecret({ name, namespace, body });
        this.logRenewal(existing === undefined, plan, next);
        return written;
      } catch (error) {
        if (!isStatus(error, 409)) throw error;
        // Another replica created or renewed it first. Its result already answers a forced renewal, so the
        // next attempt only adopts, unless the Secret still needs work by the ordinary rules.
        this.logger.info({ secret: this.secretRef(), attempt }, 'Secret written by another replica: adopting it');
        request = {};
      }
    }
    throw new CertificateConflictError(
      `Secret ${this.secretRef()} kept changing under ${CONFLICT_ATTEMPTS} read-modify-write attempts`,
    );
  }

  private async readSecret(): Promise<V1Secret | undefined> {
    try {
      return await this.options.clients.core.readNamespacedSecret({
        name: this.options.secretName,
        namespace: this.options.namespace,
      });
    } catch (error) {
      if (isStatus(error, 404)) return undefined;
      throw error;
    }
  }

  /** Brings every webhook's caBundle in step; returns the configuration as it now stands (undefined: absent). */
  private async syncBundle(state: CertState, secretUid: string): Promise<V1MutatingWebhookConfiguration | undefined> {
    const name = this.options.webhookConfigName;
    const source = { secretUid, generation: state.generation };
    const bundle = trustBundle(state);
    for (let attempt = 1; attempt <= CONFLICT_ATTEMPTS; attempt += 1) {
      let config: V1MutatingWebhookConfiguration;
      try {
        config = await this.admission.readMutatingWebhookConfiguration({ name });
      } catch (error) {
        if (!isStatus(error, 404)) throw error;
        if (!this.missingConfigLogged) {
          this.logger.warn({ webhookConfiguration: name }, 'MutatingWebhookConfiguration not found: its caBundle is set once it exists');
          this.missingConfigLogged = true;
        }
        return undefined;
      }
      this.missingConfigLogged = false;
      const decision = decideBundle(config, bundle, source);
      if (decision.kind !== 'update') return config;
      try {
        const updated = await this.admission.replaceMutatingWebhookConfiguration({ name, body: decision.body });
        this.logger.info(
          { webhookConfiguration: name, webhooks: decision.changedWebhooks, cas: bundle.length, generation: state.generation },
          'caBundle updated',
        );
        return updated;
      } catch (error) {
        if (!isStatus(error, 409)) throw error;
      }
    }
    throw new CertificateConflictError(`MutatingWebhookConfiguration ${name} kept changing under ${CONFLICT_ATTEMPTS} attempts`);
  }

  private async writeFiles(state: CertState): Promise<void> {
    const { ca, serving } = state;
    if (ca === undefined || serving === undefined) return;
    const result = await writeAtomicDir(
      this.options.dir,
      {
        [FILE_NAMES.cert]: { content: serving.certPem, mode: 0o644 },
        [FILE_NAMES.key]: { content: serving.keyPem, mode: 0o600 },
        [FILE_NAMES.ca]: { content: ca.certPem, mode: 0o644 },
      },
      this.now(),
    );
    if (result === 'written') {
      this.logger.info(
        { dir: this.options.dir, notAfter: serving.cert.validTo, fingerprint256: serving.cert.fingerprint256 },
        'serving certificate files written',
      );
    }
  }

  private logRenewal(created: boolean, plan: RenewalPlan, next: CertState): void {
    this.logger.info(
      {
        secret: this.secretRef(),
        created,
        ca: plan.ca.kind,
        servingReason: plan.issueServing,
        droppedPreviousCa: plan.dropPrevious,
        generation: next.generation,
        servingNotAfter: next.serving?.cert.validTo,
        caNotAfter: next.ca?.cert.validTo,
      },
      created ? 'certificate Secret created' : 'certificate Secret renewed',
    );
  }

  private secretRef(): string {
    return `${this.options.namespace}/${this.options.secretName}`;
  }
}

function isStatus(error: unknown, code: number): boolean {
  return error instanceof ApiException && error.code === code;
}
