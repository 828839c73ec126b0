/**
 * One pass of self-managed certificates: make the Secret current, then the webhook configuration's
 * caBundle, then the files the server reads. Each step reads before it writes, so of replicas passing at
 * the same time one wins each write and the others adopt its result (retry-on-conflict.ts).
 */
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  type V1MutatingWebhookConfiguration,
  type V1Secret,
} from '@kubernetes/client-node';
import type { KubeClients } from '../kube-client/clients.js';
import type { Logger } from '../logging/logger.js';
import type { Clock } from '../time/clock.js';
import { readAtomicDir, writeAtomicDir } from './atomic-dir.js';
import {
  applyPlan,
  planIsEmpty,
  planRenewal,
  type RenewalPlan,
  type RenewalPolicy,
  type RenewalRequest,
} from './plan.js';
import { STARTUP_ERRORS } from '../errors/index.js';
import { isStatus, retryOnConflict } from './retry-on-conflict.js';
import { secretFromState, stateFromSecret, trustBundle, type CertState } from './state.js';
import type { PassOutcome, SyncPasses } from './sync-schedule.js';
import { bundleTrusts, decideBundle } from './webhook-bundle.js';

/** Where the certificates live. */
export interface CertificatePlaces {
  clients: KubeClients;
  namespace: string;
  secretName: string;
  webhookConfigName: string;
  /** The directory the server reads its pair from. */
  dir: string;
}

const FILE_NAMES = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt' } as const;

/** The files a pass writes into `dir`. */
export function certificateFiles(dir: string): { certFile: string; keyFile: string; caFile: string } {
  return { certFile: join(dir, FILE_NAMES.cert), keyFile: join(dir, FILE_NAMES.key), caFile: join(dir, FILE_NAMES.ca) };
}

export class CertificateSync implements SyncPasses {
  private readonly admission: AdmissionregistrationV1Api;
  private missingConfigLogged = false;

  constructor(
    private readonly places: CertificatePlaces,
    private readonly policy: RenewalPolicy,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.admission = places.clients.api(AdmissionregistrationV1Api);
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
        { webhookConfiguration: this.places.webhookConfigName },
        'caBundle does not trust the CA of the Secret yet: keeping the current certificate files',
      );
      return { retrySoon: true };
    }
    await this.writeFiles(state);
    return { retrySoon: config === undefined || !trusted };
  }

  async filesPresent(): Promise<boolean> {
    return (await readAtomicDir(this.places.dir, Object.values(FILE_NAMES))) !== undefined;
  }

  /**
   * The Secret as stored after this pass's renewals: filled, renewed, adopted or unchanged. The install makes
   * the Secret (empty) by name, so that the webhook needs no right to create Secrets; an absent one is an
   * error, retried with the pass, never created here.
   */
  private currentSecret(initial: RenewalRequest): Promise<V1Secret> {
    const { namespace, secretName: name } = this.places;
    const writeSecret = async (attempt: number): Promise<V1Secret> => {
      // A later attempt follows a conflict: another replica filled or renewed the Secret first, and its
      // result already answers a forced renewal, so only the ordinary rules can still ask for work.
      const request = attempt === 1 ? initial : {};
      const existing = await this.readSecret();
      if (existing === undefined) throw new STARTUP_ERRORS.certificateSecretMissing.Error(this.secretRef());
      const current = stateFromSecret(existing);
      const at = new Date(this.clock.now());
      const plan = planRenewal(current, at, this.policy, request);
      if (planIsEmpty(plan)) return existing;

      const next = await applyPlan(current, plan, at, this.policy);
      const body = secretFromState(next, name, namespace, existing);
      const written = await this.places.clients.core.replaceNamespacedSecret({ name, namespace, body });
      this.logRenewal(Object.keys(existing.data ?? {}).length === 0, plan, next);
      return written;
    };
    return retryOnConflict(`Secret ${this.secretRef()}`, writeSecret, (attempt) =>
      this.logger.info({ secret: this.secretRef(), attempt }, 'Secret written by another replica: adopting it'),
    );
  }

  private async readSecret(): Promise<V1Secret | undefined> {
    try {
      return await this.places.clients.core.readNamespacedSecret({
        name: this.places.secretName,
        namespace: this.places.namespace,
      });
    } catch (error) {
      if (isStatus(error, 404)) return undefined;
      throw error;
    }
  }

  /** Brings every webhook's caBundle in step; returns the configuration as it now stands (undefined: absent). */
  private syncBundle(state: CertState, secretUid: string): Promise<V1MutatingWebhookConfiguration | undefined> {
    const name = this.places.webhookConfigName;
    const source = { secretUid, generation: state.generation };
    const bundle = trustBundle(state);
    const writeBundle = async (): Promise<V1MutatingWebhookConfiguration | undefined> => {
      const config = await this.readWebhookConfig();
      if (config === undefined) return undefined;
      const decision = decideBundle(config, bundle, source);
      if (decision.kind !== 'update') return config;
      const updated = await this.admission.replaceMutatingWebhookConfiguration({ name, body: decision.body });
      this.logger.info(
        {
          webhookConfiguration: name,
          webhooks: decision.changedWebhooks,
          cas: bundle.length,
          generation: state.generation,
        },
        'caBundle updated',
      );
      return updated;
    };
    return retryOnConflict(`MutatingWebhookConfiguration ${name}`, writeBundle);
  }

  /** The configuration, or undefined while it does not exist (said once per absence). */
  private async readWebhookConfig(): Promise<V1MutatingWebhookConfiguration | undefined> {
    const name = this.places.webhookConfigName;
    try {
      const config = await this.admission.readMutatingWebhookConfiguration({ name });
      this.missingConfigLogged = false;
      return config;
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
      if (!this.missingConfigLogged) {
        this.logger.warn(
          { webhookConfiguration: name },
          'MutatingWebhookConfiguration not found: its caBundle is set once it exists',
        );
        this.missingConfigLogged = true;
      }
      return undefined;
    }
  }

  private async writeFiles(state: CertState): Promise<void> {
    const { ca, serving } = state;
    if (ca === undefined || serving === undefined) return;
    const result = await writeAtomicDir(
      this.places.dir,
      {
        [FILE_NAMES.cert]: { content: serving.certPem, mode: 0o644 },
        [FILE_NAMES.key]: { content: serving.keyPem, mode: 0o600 },
        [FILE_NAMES.ca]: { content: ca.certPem, mode: 0o644 },
      },
      new Date(this.clock.now()),
    );
    if (result === 'written') {
      this.logger.info(
        { dir: this.places.dir, notAfter: serving.cert.validTo, fingerprint256: serving.cert.fingerprint256 },
        'serving certificate files written',
      );
    }
  }

  private logRenewal(filled: boolean, plan: RenewalPlan, next: CertState): void {
    this.logger.info(
      {
        secret: this.secretRef(),
        filled,
        ca: plan.ca.kind,
        servingReason: plan.issueServing,
        droppedPreviousCa: plan.dropPrevious,
        generation: next.generation,
        servingNotAfter: next.serving?.cert.validTo,
        caNotAfter: next.ca?.cert.validTo,
      },
      filled ? 'certificate Secret filled' : 'certificate Secret renewed',
    );
  }

  private secretRef(): string {
    return `${this.places.namespace}/${this.places.secretName}`;
  }
}
