// `sandbox-injector preflight` against a real kube-apiserver. The install is made of its objects directly (no
// kubelet runs here, so nothing needs to run): upstream's CRD, ConfigMap and controller Deployment, our webhook
// Deployment, its webhook configuration with a caBundle, a Service with an EndpointSlice holding a ready
// endpoint, deliver-env's Lease held now, and an Auto Sandbox. Each check fails once with its message, then the
// install is put back; and every check passes on it.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { CheckResult } from '../../src/cli/preflight/facts.js';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import type { KubectlResult as Run } from './support/kubectl.js';

const CLI = path.join(repoRoot, 'dist', 'cli', 'main.js');
const UPSTREAM_NS = 'sandbox-system';
const OUR_NS = 'sandbox-injector-system';
const SANDBOX_NS = 'e2e-preflight';
const CONTROLLER_USER = `system:serviceaccount:${UPSTREAM_NS}:sandbox-controller-manager`;
const HOUR_S = 3600;

type Json = Record<string, unknown>;

let cluster: TestCluster;

function c(): TestCluster {
  return cluster;
}

function preflight(args: string[] = []): Promise<Run> {
  const all = [CLI, 'preflight', '--kubeconfig', c().kubeconfigPath, ...args];
  return new Promise((resolve) => {
    execFile(process.execPath, all, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

/** The JSON report by check name, and the exit status. */
async function report(args: string[] = []): Promise<{ code: number; checks: Map<string, CheckResult> }> {
  const run = await preflight([...args, '-o', 'json']);
  const results = JSON.parse(run.stdout) as CheckResult[];
  return { code: run.code, checks: new Map(results.map((result) => [result.name, result])) };
}

/** The one check `name` fails, with a message matching `message`, and every other check passes. */
async function expectOnlyFailure(name: string, message: RegExp): Promise<void> {
  const { code, checks } = await report();
  const failed = [...checks.values()].filter((result) => !result.ok);
  expect(failed.map((result) => result.name)).toEqual([name]);
  expect(failed[0]?.message).toMatch(message);
  expect(failed[0]?.fix).toEqual(expect.any(String));
  expect(code).toBe(1);
}

function deployment(namespace: string, name: string, spec: Json): Json {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { namespace, name },
    spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec } },
  };
}

const configMap = (): Json =>
  parseYaml(
    readFileSync(path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml'), 'utf8'),
  ) as Json;

const controller = deployment(UPSTREAM_NS, 'sandbox-controller-manager', {
  serviceAccountName: 'sandbox-controller-manager',
  containers: [{ name: 'manager', image: 'openkruise/agents-controller:v0.1.0' }],
});

function injector(trusted: string): Json {
  return deployment(OUR_NS, 'sandbox-injector', {
    serviceAccountName: 'sandbox-injector',
    containers: [
      {
        name: 'sandbox-injector',
        image: 'ghcr.io/example/sandbox-injector:0.1.0',
        args: ['serve', `--trusted-creators=${trusted}`, '--webhook-config-name=sandbox-injector'],
        env: [{ name: 'SANDBOX_INJECTOR_WRAPPER_IMAGE', value: 'ghcr.io/example/sandbox-injector:0.1.0' }],
      },
    ],
  });
}

function webhookConfiguration(caBundle: string | undefined): Json {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'sandbox-injector' },
    webhooks: [
      {
        name: 'sandbox-injector.agents.kruise.io',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        // Nothing here serves it: Ignore, and a selector no object has, keep the cluster's own writes flowing.
        failurePolicy: 'Ignore',
        objectSelector: { matchLabels: { 'e2e-preflight/never': 'true' } },
        clientConfig: {
          service: { namespace: OUR_NS, name: 'sandbox-injector', path: '/mutate', port: 443 },
          ...(caBundle === undefined ? {} : { caBundle }),
        },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
      },
    ],
  };
}

function endpointSlice(ready: boolean): Json {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      namespace: OUR_NS,
      name: 'sandbox-injector-abcde',
      labels: { 'kubernetes.io/service-name': 'sandbox-injector' },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.0.0.7'], conditions: { ready } }],
    ports: [{ name: 'https', port: 8443, protocol: 'TCP' }],
  };
}

/** deliver-env's Lease, renewed `agoS` seconds ago for `durationS`. */
function lease(agoS: number, durationS: number): Json {
  const renewed = new Date(Date.now() - agoS * 1000).toISOString().replace('Z', '000Z');
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { namespace: OUR_NS, name: 'sandbox-injector-deliver-env' },
    spec: {
      holderIdentity: 'deliver-env-0_e2e',
      leaseDurationSeconds: durationS,
      acquireTime: renewed,
      renewTime: renewed,
    },
  };
}

const autoSandbox: Json = {
  apiVersion: 'agents.kruise.io/v1alpha1',
  kind: 'Sandbox',
  metadata: { namespace: SANDBOX_NS, name: 'wrapped' },
  spec: {
    runtimes: [{ name: 'agent-runtime' }],
    envVarsInjectionPolicy: 'Auto',
    template: { spec: { containers: [{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }] } },
  },
};

beforeAll(async () => {
  cluster = await startCluster();
  for (const ns of [UPSTREAM_NS, OUR_NS, SANDBOX_NS]) await c().ensureNamespace(ns);
  await c().applyObject({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { namespace: UPSTREAM_NS, name: 'sandbox-controller-manager' },
  });
  await c().applyObject(configMap());
  await c().applyObject(controller);
  await c().applyObject(injector(CONTROLLER_USER));
  await c().applyObject(webhookConfiguration(Buffer.from(c().caPem).toString('base64')));
  await c().applyObject({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: OUR_NS, name: 'sandbox-injector' },
    spec: { ports: [{ name: 'https', port: 443, targetPort: 8443, protocol: 'TCP' }] },
  });
  await c().applyObject(endpointSlice(true));
  await c().applyObject(lease(0, HOUR_S));
});

afterAll(async () => {
  await cluster?.stop();
});

describe('preflight on a real kube-apiserver', () => {
  it('fails sandbox-crd while the Sandbox CRD is not installed', async () => {
    await expectOnlyFailure('sandbox-crd', /^CRD sandboxes\.agents\.kruise\.io is not installed$/);
    await c().installSandboxCrd();
    await c().applyObject(autoSandbox);
  });

  it('passes every check on a good install, exit 0, one line per check', async () => {
    const run = await preflight();
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 8).map((line) => line.split(/\s+/, 2))).toEqual(
      [
        'kubernetes-version',
        'sandbox-crd',
        'injection-config',
        'trusted-creators',
        'webhook-configuration',
        'webhook-endpoints',
        'deliver-env',
        'injector-image',
      ].map((name) => ['ok', name]),
    );
    expect(lines.at(-1)).toBe('all 8 checks pass');
    const { checks } = await report();
    expect(checks.get('injection-config')?.message).toBe(
      `ConfigMap ${UPSTREAM_NS}/sandbox-injection-config: runtimes agent-runtime, csi`,
    );
    expect(checks.get('trusted-creators')?.message).toBe(
      `${CONTROLLER_USER} (Deployment ${UPSTREAM_NS}/sandbox-controller-manager) is trusted by Deployment ${OUR_NS}/sandbox-injector`,
    );
    expect(checks.get('deliver-env')?.message).toMatch(
      /^1 Sandbox\(es\) use Auto, e2e-preflight\/wrapped first; Lease sandbox-injector-system\/sandbox-injector-deliver-env is held by deliver-env-0_e2e$/,
    );
  });

  it('fails injection-config for a broken key, naming it', async () => {
    const broken = configMap();
    broken.data = { ...(broken.data as Json), csi: '{"csiSidecar": [' };
    await c().applyObject(broken);
    await expectOnlyFailure('injection-config', /: key csi: invalid JSON: .* \(runtimes agent-runtime parse\)$/);
    await c().applyObject(configMap());
  });

  it("fails trusted-creators when the webhook's list misses upstream's controller", async () => {
    await c().applyObject(injector(`system:serviceaccount:${UPSTREAM_NS}:someone-else`));
    await expectOnlyFailure(
      'trusted-creators',
      new RegExp(
        `^${CONTROLLER_USER} .* is not in .*someone-else.* every Sandbox pod would be denied \\(SI_CREATOR_UNTRUSTED, 403\\)$`,
      ),
    );
    await c().applyObject(injector(CONTROLLER_USER));
  });

  it('fails webhook-configuration without a caBundle', async () => {
    await c().applyObject(webhookConfiguration(undefined));
    await expectOnlyFailure('webhook-configuration', /has no caBundle: kube-apiserver cannot trust the webhook$/);
    await c().applyObject(webhookConfiguration(Buffer.from(c().caPem).toString('base64')));
  });

  it('fails webhook-endpoints when no endpoint is ready', async () => {
    await c().applyObject(endpointSlice(false));
    await expectOnlyFailure('webhook-endpoints', /has no ready endpoint/);
    await c().applyObject(endpointSlice(true));
  });

  it('fails deliver-env when no replica holds the Lease', async () => {
    await c().applyObject(lease(120, 15));
    await expectOnlyFailure('deliver-env', /held by deliver-env-0_e2e expired \d+s ago: no replica delivers$/);
    await c().kubectlOk(['-n', OUR_NS, 'delete', 'lease', 'sandbox-injector-deliver-env']);
    await expectOnlyFailure('deliver-env', /does not exist: deliver-env has never run$/);
    await c().applyObject(lease(0, HOUR_S));
    expect((await report()).code).toBe(0);
  });

  it('a check that fails is named on stderr, exit 1', async () => {
    const run = await preflight(['--trusted-creators', 'nobody']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('sandbox-injector preflight: 1 check(s) failed: trusted-creators\n');
    expect(run.stdout).toMatch(/^FAIL {2}trusted-creators .*; fix: give serve --trusted-creators=/m);
  });
});
