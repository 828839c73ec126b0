/**
 * One pass of self-managed certificates (src/certs/certificate-sync.ts) against an in-memory API server
 * that checks resourceVersions as kube-apiserver does, so the races between replicas can be staged: another
 * writer gets in between a read and a write exactly when the test says. The real API server is in
 * test/e2e/self-managed-certs.e2e.test.ts.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiException, type KubeConfig, type V1MutatingWebhookConfiguration, type V1Secret } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificateSync, certificateFiles } from '../../src/certs/certificate-sync.js';
import { checkPolicy, type RenewalPolicy } from '../../src/certs/plan.js';
import { serviceSubjectNames } from '../../src/certs/pki.js';
import { CertificateConflictError } from '../../src/certs/retry-on-conflict.js';
import { stateFromSecret } from '../../src/certs/state.js';
import type { KubeClients } from '../../src/sources/kube/clients.js';
import { recordingLogger } from '../server/support/server.js';
import { temporaryDirectory } from '../server/support/pki.js';

const NAMESPACE = 'sandbox-system';
const SECRET = 'sandbox-injector-certs';
const WEBHOOK_CONFIG = 'sandbox-injector';
const NOW = new Date('2026-12-01T00:00:00Z');

const policy: RenewalPolicy = {
  names: serviceSubjectNames('sandbox-injector', NAMESPACE),
  servingValidityDays: 365,
  servingRenewBeforeDays: 30,
  caValidityDays: 3650,
  caRenewBeforeDays: 365,
  caOverlapMs: 10 * 60 * 1000,
};
checkPolicy(policy);

let root: string;
let removeRoot: () => Promise<void>;
let dirs = 0;
beforeAll(async () => {
  ({ dir: root, remove: removeRoot } = await temporaryDirectory('certificate-sync'));
});
afterAll(() => removeRoot());

const status = (code: number): ApiException<string> => new ApiException(code, `HTTP ${code}`, '', {});
const copy = <T>(value: T): T => structuredClone(value);

/**
 * The Secret and the webhook configuration, each with a resourceVersion a write must carry. `before*Write`
 * runs once, just before the next write of that object is checked: another replica writing in between.
 */
class FakeApiServer {
  secret: V1Secret | undefined;
  config: V1MutatingWebhookConfiguration | undefined;
  beforeSecretWrite: (() => Promise<void>) | undefined;
  beforeConfigWrite: (() => Promise<void>) | undefined;
  configConflictsLeft = 0;
  private version = 0;

  readonly clients = {
    kubeConfig: { makeApiClient: () => this.admission } as unknown as KubeConfig,
    core: {
      readNamespacedSecret: () => (this.secret === undefined ? Promise.reject(status(404)) : Promise.resolve(copy(this.secret))),
      createNamespacedSecret: async ({ body }: { body: V1Secret }) => {
        await this.interleave('beforeSecretWrite');
        if (this.secret !== undefined) throw status(409);
        this.secret = this.stamp({ ...body, metadata: { ...body.metadata, uid: 'secret-uid' } });
        return copy(this.secret);
      },
      replaceNamespacedSecret: async ({ body }: { body: V1Secret }) => {
        await this.interleave('beforeSecretWrite');
        if (body.metadata?.resourceVersion !== this.secret?.metadata?.resourceVersion) throw status(409);
        this.secret = this.stamp(body);
        return copy(this.secret);
      },
    },
  } as unknown as KubeClients;

  private readonly admission = {
    readMutatingWebhookConfiguration: () =>
      this.config === undefined ? Promise.reject(status(404)) : Promise.resolve(copy(this.config)),
    replaceMutatingWebhookConfiguration: async ({ body }: { body: V1MutatingWebhookConfiguration }) => {
      await this.interleave('beforeConfigWrite');
      if (this.configConflictsLeft > 0) {
        this.configConflictsLeft -= 1;
        throw status(409);
      }
      if (body.metadata?.resourceVersion !== this.config?.metadata?.resourceVersion) throw status(409);
      this.config = this.stamp(body);
      return copy(this.config);
    },
  };

  createConfig(): void {
    this.config = this.stamp<V1MutatingWebhookConfiguration>({
      metadata: { name: WEBHOOK_CONFIG },
      webhooks: [{ name: 'inject.agents.kruise.io', clientConfig: {}, admissionReviewVersions: ['v1'], sideEffects: 'None' }],
    });
  }

  private stamp<T extends { metadata?: { resourceVersion?: string } }>(object: T): T {
    this.version += 1;
    return copy({ ...object, metadata: { ...object.metadata, resourceVersion: String(this.version) } });
  }

  private async interleave(hook: 'beforeSecretWrite' | 'beforeConfigWrite'): Promise<void> {
    const other = this[hook];
    this[hook] = undefined;
    await other?.();
  }
}

function replica(api: FakeApiServer): { sync: CertificateSync; dir: string; logger: ReturnType<typeof recordingLogger> } {
  dirs += 1;
  const dir = join(root, `replica-${dirs}`);
  const logger = recordingLogger();
  const places = { clients: api.clients, namespace: NAMESPACE, secretName: SECRET, webhookConfigName: WEBHOOK_CONFIG, dir };
  return { sync: new CertificateSync(places, policy, () => NOW, logger), dir, logger };
}

function servingCertPem(secret: V1Secret | undefined): string | undefined {
  return secret === undefined ? undefined : stateFromSecret(secret).serving?.certPem;
}

describe('CertificateSync', () => {
  it('creates the Secret, puts its CA in the caBundle and writes the files the server reads', async () => {
    const api = new FakeApiServer();
    api.createConfig();
    const { sync, dir } = replica(api);
    expect(await sync.filesPresent()).toBe(false);

    expect(await sync.pass({})).toEqual({ retrySoon: false });

    expect(await sync.filesPresent()).toBe(true);
    expect(await readFile(certificateFiles(dir).certFile, 'utf8')).toBe(servingCertPem(api.secret));
    const bundle = Buffer.from(api.config?.webhooks?.[0]?.clientConfig.caBundle ?? '', 'base64').toString('utf8');
    expect(bundle).toContain(stateFromSecret(api.secret ?? {}).ca?.certPem.trim());
  });

  it('adopts the Secret another replica created between its read and its create', async () => {
    const api = new FakeApiServer();
    api.createConfig();
    const winner = replica(api);
    const loser = replica(api);
    api.beforeSecretWrite = async () => {
      await winner.sync.pass({});
    };

    await loser.sync.pass({});

    const served = servingCertPem(api.secret);
    expect(await readFile(certificateFiles(loser.dir).certFile, 'utf8')).toBe(served);
    expect(await readFile(certificateFiles(winner.dir).certFile, 'utf8')).toBe(served);
    expect(loser.logger.lines.find((line) => line.message === 'Secret written by another replica: adopting it')).toMatchObject({
      fields: { secret: `${NAMESPACE}/${SECRET}`, attempt: 1 },
    });
    expect(loser.logger.lines.some((line) => line.message === 'certificate Secret created')).toBe(false);
  });

  it('a forced renewal that loses the race takes the winner\'s renewal instead of renewing again', async () => {
    const api = new FakeApiServer();
    api.createConfig();
    const first = replica(api);
    await first.sync.pass({});
    const before = servingCertPem(api.secret);
    const other = replica(api);
    let othersRenewal: string | undefined;
    api.beforeSecretWrite = async () => {
      await other.sync.pass({ renewServing: true });
      othersRenewal = servingCertPem(api.secret);
    };

    await first.sync.pass({ renewServing: true });

    expect(othersRenewal).not.toBe(before);
    expect(servingCertPem(api.secret)).toBe(othersRenewal);
    expect(first.logger.lines.filter((line) => line.message === 'certificate Secret renewed')).toEqual([]);
  });

  it('updates the caBundle on a fresh read when the configuration changed under it', async () => {
    const api = new FakeApiServer();
    api.createConfig();
    api.beforeConfigWrite = () => {
      // Someone re-applies the configuration: a new resourceVersion, the caBundle still empty.
      api.createConfig();
      return Promise.resolve();
    };
    const { sync } = replica(api);

    expect(await sync.pass({})).toEqual({ retrySoon: false });
    expect(api.config?.webhooks?.[0]?.clientConfig.caBundle).not.toBeUndefined();
  });

  it('fails the pass with CertificateConflictError when the configuration keeps changing', async () => {
    const api = new FakeApiServer();
    api.createConfig();
    api.configConflictsLeft = 5;
    const { sync } = replica(api);
    await expect(sync.pass({})).rejects.toBeInstanceOf(CertificateConflictError);
  });

  it('without a configuration, serves the Secret\'s pair, looks again soon and says so once', async () => {
    const api = new FakeApiServer();
    const { sync, logger } = replica(api);
    expect(await sync.pass({})).toEqual({ retrySoon: true });
    expect(await sync.pass({})).toEqual({ retrySoon: true });
    expect(await sync.filesPresent()).toBe(true);
    expect(logger.lines.filter((line) => line.message.startsWith('MutatingWebhookConfiguration not found'))).toHaveLength(1);
  });
});
