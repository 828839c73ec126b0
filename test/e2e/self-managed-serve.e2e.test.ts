// Two real `sandbox-injector serve` processes in self-managed certificate mode, started together against a real
// kube-apiserver: they must settle on one Secret, fill the webhook's caBundle, and serve a certificate that the
// bundle verifies, which kube-apiserver itself proves by calling them. A renewal made by another replica is
// adopted by both while a client keeps sending reviews, without one failed admission.
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSelfManagedCertificates } from '../../src/certs/self-managed.js';
import { createKubeClients } from '../../src/kube-client/clients.js';
import { reviewFor } from '../support/conformance.js';
import { waitUntil } from '../support/wait-until.js';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { JsonLog } from './support/json-log.js';
import { terminate } from './support/processes.js';
import { createSandbox, sandboxPod } from './support/sandbox-pods.js';
import { freePort, startWebhookProcess, webhookConfiguration, type WebhookProcess } from './support/webhook-process.js';

const NS = 'e2e-self-managed';
const SERVICE_NAME = 'sandbox-injector.sandbox-injector-system.svc';

let cluster: TestCluster;
const replicas: WebhookProcess[] = [];

function servedCertificate(port: number, caPem: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername: SERVICE_NAME, ca: caPem }, () => {
      const peer = socket.getPeerX509Certificate();
      socket.end();
      if (peer === undefined) reject(new Error('no peer certificate'));
      else resolve(peer);
    });
    socket.on('error', reject);
  });
}

async function caBundle(): Promise<string> {
  const out = await cluster.kubectlOk([
    'get',
    'mutatingwebhookconfiguration',
    'sandbox-injector',
    '-o',
    'jsonpath={.webhooks[0].clientConfig.caBundle}',
  ]);
  return Buffer.from(out, 'base64').toString('utf8');
}

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.installSandboxCrd();
  // Upstream's namespace (a stand-in) holds the injection ConfigMap; ours holds the certificate Secret.
  await cluster.ensureNamespace('sandbox-system');
  await cluster.ensureNamespace('sandbox-injector-system');
  await cluster.ensureNamespace(NS);
  await cluster.kubectlOk([
    'apply',
    '-f',
    path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml'),
  ]);
  // The empty certificate Secret the install makes, which the replicas fill (they never create it).
  await cluster.kubectlOk(['apply', '-f', path.join(repoRoot, 'manifests', 'base', 'certificate-secret.yaml')]);
  // The webhook configuration exists before the servers, as `kubectl apply -k manifests/` creates it; it points
  // at the first replica, and its caBundle is left for the replicas to fill in.
  const port = await freePort();
  const url = `https://127.0.0.1:${port}/mutate`;
  await cluster.kubectlOk(['apply', '-f', '-'], {
    input: JSON.stringify(webhookConfiguration('sandbox-injector', url, undefined)),
  });
  replicas.push(
    ...(await Promise.all([
      startWebhookProcess(cluster, { selfManaged: true, port, extraArgs: ['--cert-poll', '1s'] }),
      startWebhookProcess(cluster, { selfManaged: true, extraArgs: ['--cert-poll', '1s'] }),
    ])),
  );
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await cluster?.stop();
});

describe('self-managed certificates, two serve processes started together', () => {
  it('end with one Secret, and a caBundle that verifies the certificate each replica serves', async () => {
    const secrets = await cluster.kubectlOk(['get', 'secrets', '-n', 'sandbox-injector-system', '-o', 'name']);
    expect(
      secrets
        .trim()
        .split('\n')
        .filter((s) => s.includes('sandbox-injector')),
    ).toEqual(['secret/sandbox-injector-tls']);

    const bundle = await waitUntil(caBundle, { what: 'the caBundle to be filled', timeoutMs: 90_000, intervalMs: 500 });
    expect(bundle).toContain('BEGIN CERTIFICATE');
    const served = await Promise.all(replicas.map((r) => servedCertificate(r.port, bundle)));
    const [a, b] = served;
    expect(a?.fingerprint256).toBe(b?.fingerprint256);
    expect(a?.checkHost(SERVICE_NAME)).toBe(SERVICE_NAME);
    expect(a?.checkIP('127.0.0.1')).toBe('127.0.0.1');
  });

  it('kube-apiserver calls a replica through that caBundle and the pod is injected', async () => {
    const uid = await createSandbox(cluster, NS, 'sbx', { runtimes: [{ name: 'agent-runtime' }], template: {} });
    const pod = sandboxPod(NS, 'sbx', uid, [{ name: 'main', image: 'python:3.12' }]);
    const injected = async (): Promise<string[] | string> => {
      const result = await cluster.kubectl(['create', '--dry-run=server', '-f', '-', '-o', 'json'], {
        input: JSON.stringify(pod),
      });
      if (result.code !== 0) return result.stderr.trim();
      const stored = JSON.parse(result.stdout) as { spec: { initContainers?: { name: string }[] } };
      return (stored.spec.initContainers ?? []).map((c) => c.name);
    };
    const names = await waitUntil(injected, {
      what: 'a dry-run pod with init containers',
      timeoutMs: 30_000,
      intervalMs: 250,
      until: (got) => typeof got !== 'string' && got.length > 0,
    });
    expect(names).toEqual(['agent-runtime']);
  });

  it('adopt a renewal made by another replica, with zero failed admissions from a client looping meanwhile', async () => {
    const bundle = await caBundle();
    const before = await servedCertificate(replicas[0]?.port ?? 0, bundle);
    let ok = 0;
    const failures: string[] = [];
    let looping = true;
    const review = JSON.stringify(
      reviewFor({ metadata: { generateName: 'loop-' }, spec: { containers: [{ name: 'main' }] } }),
    );
    const loop = (async () => {
      while (looping) {
        for (const replica of replicas) {
          // A new connection each time, so every request also proves the certificate it is served then.
          const outcome = await admit(replica.port, bundle, review);
          if (outcome === 'ok') ok += 1;
          else failures.push(outcome);
        }
      }
    })();

    // A third replica renews, as the first one to see the certificate near its expiry would.
    const other = startSelfManagedCertificates({
      clients: createKubeClients(cluster.kubeconfigPath),
      namespace: 'sandbox-injector-system',
      secretName: 'sandbox-injector-tls',
      serviceName: 'sandbox-injector',
      webhookConfigName: 'sandbox-injector',
      dir: mkdtempSync(path.join(tmpdir(), 'si-e2e-renewer-')),
      extraSans: ['127.0.0.1'],
    });
    try {
      await other.ready;
      await other.renewNow();
      await waitUntil(
        () => Promise.all(replicas.map(async (r) => (await servedCertificate(r.port, bundle)).fingerprint256)),
        {
          what: 'every replica to serve the renewed certificate',
          timeoutMs: 30_000,
          intervalMs: 200,
          until: (served) => served.every((fingerprint) => fingerprint !== before.fingerprint256),
        },
      );
      await sleep(500);
    } finally {
      looping = false;
      await loop;
      await other.stop();
    }
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(20);
  });
});

/** One review over a fresh TLS connection that trusts `caPem` for the service name: 'ok' or what went wrong. */
describe('a serve process whose certificate Secret is not there yet', () => {
  it('says so, keeps running and retrying, and gets ready once the install makes the Secret', async () => {
    const log = new JsonLog('late serve');
    const child = spawn(
      process.execPath,
      [
        path.join(repoRoot, 'dist', 'cli', 'main.js'),
        'serve',
        '--host',
        '127.0.0.1',
        '--port',
        String(await freePort()),
        '--metrics-port',
        '0',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--cert-mode',
        'self-managed',
        '--cert-dir',
        mkdtempSync(path.join(tmpdir(), 'si-e2e-late-')),
        '--cert-secret-name',
        'late-tls',
        '--webhook-config-name',
        'sandbox-injector-late',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    log.attach(child);
    try {
      const [failed] = await log.logged(
        (l) => l.msg === 'self-managed certificates: pass failed',
        'the missing Secret reported',
      );
      expect(JSON.stringify(failed)).toContain(
        'Secret sandbox-injector-system/late-tls does not exist: self-managed certificates fill the Secret the install makes',
      );
      // Still waiting, not ended: the next retries are what it waits for.
      expect(child.exitCode).toBeNull();
      await cluster.kubectlOk(['apply', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'late-tls', namespace: 'sandbox-injector-system' },
          type: 'Opaque',
        }),
      });
      await log.logged((l) => l.msg === 'self-managed certificate ready', 'the certificate ready', 1, 60_000);
      const secret = JSON.parse(
        await cluster.kubectlOk(['-n', 'sandbox-injector-system', 'get', 'secret', 'late-tls', '-o', 'json']),
      ) as { type: string; data?: Record<string, string> };
      expect(secret.type).toBe('Opaque');
      expect(Object.keys(secret.data ?? {}).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    } finally {
      await terminate(child);
    }
  });
});

function admit(port: number, caPem: string, body: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate',
        method: 'POST',
        servername: SERVICE_NAME,
        ca: caPem,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve(
            res.statusCode === 200 && text.includes('"allowed":true')
              ? 'ok'
              : `HTTP ${res.statusCode ?? 0}: ${text.slice(0, 100)}`,
          );
        });
      },
    );
    req.on('error', (error) => resolve(error.message));
    req.end(body);
  });
}
