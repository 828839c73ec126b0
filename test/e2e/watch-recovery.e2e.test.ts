// The cached ConfigMap watch, failing for real: the webhook runs as a service account that may not yet read the
// ConfigMap, so every list is refused by RBAC. It must stay alive and not ready, keep retrying with backoff, and
// become ready and inject once the permission is granted, without a restart.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { decodePatch, reviewFor } from '../support/conformance.js';
import { waitUntil } from '../support/wait-until.js';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { probe, startWebhookProcess, type WebhookProcess } from './support/webhook-process.js';

/** Upstream's namespace (a stand-in), where the injection ConfigMap and the Role that reads it are. */
const NS = 'sandbox-system';
/** Ours, where the webhook's service account is, as the install makes it. */
const SA_NS = 'sandbox-injector-system';
const SA = 'restricted-webhook';

let cluster: TestCluster;
let webhook: WebhookProcess | undefined;

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.ensureNamespace(NS);
  await cluster.ensureNamespace(SA_NS);
  await cluster.kubectlOk([
    'apply',
    '-f',
    path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml'),
  ]);
  await cluster.kubectlOk(['create', 'serviceaccount', SA, '-n', SA_NS]);
});

afterAll(async () => {
  await webhook?.stop();
  await cluster?.stop();
});

async function serviceAccountKubeconfig(): Promise<string> {
  const token = (await cluster.kubectlOk(['create', 'token', SA, '-n', SA_NS, '--duration=1h'])).trim();
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'si-e2e-sa-')), 'kubeconfig');
  writeFileSync(
    file,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'e2e',
          cluster: {
            server: cluster.server,
            'certificate-authority-data': Buffer.from(cluster.caPem).toString('base64'),
          },
        },
      ],
      users: [{ name: SA, user: { token } }],
      contexts: [{ name: 'sa', context: { cluster: 'e2e', user: SA } }],
      'current-context': 'sa',
    }),
    { mode: 0o600 },
  );
  return file;
}

describe('the ConfigMap watch recovers from errors by itself', () => {
  it('is not ready while the list is refused, then ready and injecting once RBAC allows it', async () => {
    webhook = await startWebhookProcess(cluster, {
      kubeconfigPath: await serviceAccountKubeconfig(),
      untilHealthy: true,
      extraArgs: ['--allow-annotation-runtimes'],
    });
    const { port, ca } = webhook;

    for (let i = 0; i < 10; i++) {
      expect(await probe('/readyz', port, ca.certPem)).toBe(503);
      await sleep(200);
    }
    const failures = await webhook.logged(
      (l) => l.msg === 'injection ConfigMap watch failed; restarting',
      'watch restarts',
      2,
    );
    expect(failures.length).toBeGreaterThanOrEqual(2);

    const grantedAt = Date.now();
    await cluster.kubectlOk([
      'create',
      'role',
      'read-injection-config',
      '-n',
      NS,
      '--verb=get,list,watch',
      '--resource=configmaps',
      '--resource-name=sandbox-injection-config',
    ]);
    await cluster.kubectlOk([
      'create',
      'rolebinding',
      'read-injection-config',
      '-n',
      NS,
      '--role=read-injection-config',
      `--serviceaccount=${SA_NS}:${SA}`,
    ]);
    await waitUntil(() => probe('/readyz', port, ca.certPem), {
      what: '/readyz to answer 200 once RBAC allows the list',
      timeoutMs: 60_000,
      intervalMs: 200,
      until: (status) => status === 200,
    });
    console.info(`ready ${Date.now() - grantedAt} ms after the RoleBinding was created`);

    const pod = {
      metadata: { generateName: 'sbx-', annotations: { 'agents.kruise.io/runtimes': 'agent-runtime' } },
      spec: { containers: [{ name: 'main' }] },
    };
    const response = await fetchReview(port, ca.certPem, JSON.stringify(reviewFor(pod)));
    expect(response.allowed).toBe(true);
    const ops = decodePatch(response.patch ?? '');
    expect(ops.map((o) => o.path)).toContain('/spec/initContainers');
  });
});

async function fetchReview(port: number, caPem: string, body: string): Promise<{ allowed: boolean; patch?: string }> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate',
        method: 'POST',
        ca: caPem,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve(
            (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { response: { allowed: boolean; patch?: string } })
              .response,
          ),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
