// The real webhook, as a separate process (`node dist/cli/main.js serve`) in cluster mode against the e2e
// cluster, serving a certificate for 127.0.0.1 that the test's MutatingWebhookConfiguration trusts.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'node:https';
import { createCa, createServingCert, type CertAndKey } from '../../server/support/pki.js';
import { waitUntil } from '../../support/wait-until.js';
import { repoRoot } from './binaries.js';
import type { TestCluster } from './cluster.js';
import { JsonLog } from './json-log.js';
import { terminate } from './processes.js';
import { freePort } from '../../../harness/serve.js';

/** The one free-port finder, the bench's and the soak's too. */
export { freePort };

const CLI = path.join(repoRoot, 'dist', 'cli', 'main.js');

export interface WebhookProcess {
  port: number;
  /** The CA of the files-mode certificate; self-managed mode keeps its CA in the cluster instead. */
  ca: CertAndKey;
  /** Every JSON log line the process wrote so far, across restarts. */
  logs: Record<string, unknown>[];
  url: string;
  /**
   * Waits until at least `count` lines written so far match, and returns them. The server gathers log lines
   * and writes them a little later than it answers, so a test never reads `logs` once and hopes.
   */
  logged(
    match: (line: Record<string, unknown>) => boolean,
    what: string,
    count?: number,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>[]>;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export interface WebhookProcessOptions {
  extraArgs?: string[];
  /** Serve a certificate the process keeps itself in a Secret (--cert-mode self-managed) instead of given files. */
  selfManaged?: boolean;
  /** Listen here instead of on a fresh free port, e.g. one a webhook configuration already names. */
  port?: number;
  /** Where to use instead of the cluster's admin kubeconfig, e.g. one with a service-account token. */
  kubeconfigPath?: string;
  /** Return once the process is up (/healthz) rather than ready (/readyz), to watch it become ready. */
  untilHealthy?: boolean;
  /** Environment variables on top of this process's, e.g. the SANDBOX_INJECTOR_* ones a Deployment sets. */
  env?: Record<string, string>;
}

export async function startWebhookProcess(
  cluster: TestCluster,
  options: WebhookProcessOptions = {},
): Promise<WebhookProcess> {
  const dir = mkdtempSync(path.join(tmpdir(), 'si-e2e-webhook-'));
  const ca = createCa('sandbox-injector-e2e-webhook-ca');
  const serving = createServingCert(ca, {
    commonName: '127.0.0.1',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  writeFileSync(path.join(dir, 'tls.crt'), serving.certPem);
  writeFileSync(path.join(dir, 'tls.key'), serving.keyPem);
  const certArgs =
    options.selfManaged === true
      ? ['--cert-mode', 'self-managed', '--cert-dir', path.join(dir, 'self-managed'), '--cert-extra-sans', '127.0.0.1']
      : [
          '--cert-mode',
          'files',
          '--tls-cert-file',
          path.join(dir, 'tls.crt'),
          '--tls-key-file',
          path.join(dir, 'tls.key'),
        ];
  // Readiness is probed before the self-managed CA is known: trust is checked by the tests, not here.
  const probeCa = options.selfManaged === true ? undefined : ca.certPem;
  const port = options.port ?? (await freePort());
  const log = new JsonLog('webhook');
  const logs = log.lines;
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    const args = [
      CLI,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--metrics-port',
      '0',
      '--kubeconfig',
      options.kubeconfigPath ?? cluster.kubeconfigPath,
      ...certArgs,
      '--log-level',
      'debug',
      ...(options.extraArgs ?? []),
    ];
    const proc = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...(options.env ?? {}) },
    });
    child = proc;
    log.attach(proc);
    await waitFor(options.untilHealthy === true ? '/healthz' : '/readyz', port, probeCa, proc);
  };

  const stop = (): Promise<void> => terminate(child);

  const logged = (
    match: (line: Record<string, unknown>) => boolean,
    what: string,
    count = 1,
    timeoutMs = 20_000,
  ): Promise<Record<string, unknown>[]> => log.logged(match, what, count, timeoutMs);

  await start();
  return { port, ca, logs, url: `https://127.0.0.1:${port}/mutate`, logged, stop, start };
}

async function waitFor(path: string, port: number, caPem: string | undefined, proc: ChildProcess): Promise<void> {
  await waitUntil(() => probe(path, port, caPem), {
    what: `the webhook to answer ${path} with 200`,
    timeoutMs: 60_000,
    intervalMs: 100,
    until: (status) => status === 200,
    giveUp: () =>
      proc.exitCode === null ? undefined : new Error(`webhook exited with ${proc.exitCode} before it was ready`),
  });
}

/** The status of GET `path`, 0 when the server does not answer. */
export function probe(path: string, port: number, caPem: string | undefined): Promise<number> {
  const trust = caPem === undefined ? { rejectUnauthorized: false } : { ca: caPem };
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', ...trust }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

export function webhookConfiguration(
  name: string,
  url: string,
  caPem: string | undefined,
  failurePolicy: 'Fail' | 'Ignore' = 'Fail',
): Record<string, unknown> {
  // Without a CA the bundle is left for the self-managed certificates to fill in.
  const caBundle = caPem === undefined ? {} : { caBundle: Buffer.from(caPem).toString('base64') };
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: `${name}.agents.kruise.io`,
        clientConfig: { url, ...caBundle },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        // The label the Sandbox controller puts on every pod it creates, as manifests/ selects it.
        objectSelector: { matchLabels: { 'agents.kruise.io/created-by': 'sandbox' } },
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        reinvocationPolicy: 'IfNeeded',
        failurePolicy,
        timeoutSeconds: 5,
      },
    ],
  };
}
