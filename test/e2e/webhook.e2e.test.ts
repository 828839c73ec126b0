// Cluster mode proven end to end: a real kube-apiserver calls the real webhook process over TLS while the
// tests play the Sandbox controller. Every pod below is also validated and stored by kube-apiserver itself.
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConformanceCases, type ConformanceCase } from '../support/conformance.js';
import { waitUntil } from '../support/wait-until.js';
import { createServingCert, repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { startWebhookProcess, webhookConfiguration, type WebhookProcess } from './support/webhook-process.js';

const NS = 'e2e-webhook';
const CONFIG_NS = 'sandbox-system';
const CONFIGMAP = path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml');
const STATUS = 'agents.kruise.io/runtime-injection-status';
/** The annotation key of conformance case 14's generic template: not a valid Kubernetes qualified name. */
const REFUSED_KEY = 'proxy.example.com/config~v2';

type Json = Record<string, unknown>;
interface StoredPod {
  metadata: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: Json[]; initContainers?: Json[]; volumes?: Json[] };
}

let cluster: TestCluster;
let webhook: WebhookProcess;

function c(): TestCluster {
  return cluster;
}

async function createSandbox(name: string, runtimes: string[], policy?: string): Promise<string> {
  const spec: Json = { runtimes: runtimes.map((r) => ({ name: r })), template: {} };
  if (policy !== undefined) spec.envVarsInjectionPolicy = policy;
  const out = await c().kubectlOk(['create', '-f', '-', '-o', 'json'], {
    input: JSON.stringify({
      apiVersion: 'agents.kruise.io/v1alpha1',
      kind: 'Sandbox',
      metadata: { name, namespace: NS },
      spec,
    }),
  });
  return (JSON.parse(out) as { metadata: { uid: string } }).metadata.uid;
}

/** A pod as the Sandbox controller creates it: owned by the Sandbox, labelled and annotated created-by. */
function ownedPod(sandbox: string, uid: string, base: Json = {}): Json {
  const pod = structuredClone(base) as { metadata?: Json; spec?: Json };
  const metadata = pod.metadata ?? {};
  const labels = (metadata.labels ?? {}) as Record<string, string>;
  const annotations = (metadata.annotations ?? {}) as Record<string, string>;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    ...pod,
    metadata: {
      generateName: `${sandbox}-`,
      ...metadata,
      namespace: NS,
      labels: { ...labels, 'agents.kruise.io/created-by': 'sandbox' },
      annotations: { ...annotations, 'agents.kruise.io/created-by': 'sandbox' },
      ownerReferences: [
        { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: sandbox, uid, controller: true },
      ],
    },
    spec: {
      // Without a token volume the stored pod holds only what the test and the webhook put there.
      automountServiceAccountToken: false,
      containers: [{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }],
      ...(pod.spec ?? {}),
    },
  };
}

async function create(pod: Json, extra: string[] = []): Promise<{ code: number; pod?: StoredPod; stderr: string }> {
  const result = await c().kubectl(['create', '-f', '-', '-o', 'json', ...extra], { input: JSON.stringify(pod) });
  return {
    code: result.code,
    stderr: result.stderr,
    pod: result.code === 0 ? (JSON.parse(result.stdout) as StoredPod) : undefined,
  };
}

async function createOk(pod: Json, extra: string[] = []): Promise<{ pod: StoredPod; stderr: string }> {
  const result = await create(pod, extra);
  if (result.pod === undefined) throw new Error(`pod refused: ${result.stderr}`);
  return { pod: result.pod, stderr: result.stderr };
}

const names = (list: Json[] | undefined): unknown[] => (list ?? []).map((x) => x.name);

/** `expected` with every field present and equal in `actual`; arrays must match in length (API defaults aside). */
function expectSubset(actual: unknown, expected: unknown, where = ''): void {
  if (Array.isArray(expected)) {
    expect(Array.isArray(actual), `${where} is an array`).toBe(true);
    const list = actual as unknown[];
    expect(list.length, `${where} length`).toBe(expected.length);
    expected.forEach((item, i) => expectSubset(list[i], item, `${where}[${i}]`));
  } else if (expected !== null && typeof expected === 'object') {
    // kube-apiserver stores an empty map as no map at all.
    if (Object.keys(expected).length === 0 && actual === undefined) return;
    expect(actual !== null && typeof actual === 'object', `${where} is an object`).toBe(true);
    for (const [key, value] of Object.entries(expected)) expectSubset((actual as Json)[key], value, `${where}.${key}`);
  } else {
    expect(actual, where).toEqual(expected);
  }
}

/** Retries a dry-run creation until `done` holds: config and webhook changes reach kube-apiserver asynchronously. */
async function eventually(pod: Json, done: (stored: StoredPod | undefined, stderr: string) => boolean): Promise<void> {
  await waitUntil(() => create(pod, ['--dry-run=server']), {
    what: 'the dry-run creation to come out as the test expects',
    timeoutMs: 20_000,
    intervalMs: 100,
    until: (result) => done(result.pod, result.stderr),
  });
}

beforeAll(async () => {
  cluster = await startCluster();
  await c().installSandboxCrd();
  await c().ensureNamespace(NS);
  await c().ensureNamespace(CONFIG_NS);
  await c().kubectlOk(['apply', '-f', CONFIGMAP]);
  webhook = await startWebhookProcess(cluster);
  await c().applyObject(webhookConfiguration('sandbox-injector-e2e', webhook.url, webhook.ca.certPem));
  const uid = await createSandbox('warmup', ['agent-runtime']);
  await eventually(ownedPod('warmup', uid), (p) => names(p?.spec.initContainers).includes('agent-runtime'));
});

afterAll(async () => {
  await webhook?.stop();
  await cluster?.stop();
});

describe('kube-apiserver calls the webhook for Sandbox pods', () => {
  it('injects what the owning Sandbox asks for, with policy Auto', async () => {
    const uid = await createSandbox('sbx-auto', ['csi', 'agent-runtime'], 'Auto');
    const { pod } = await createOk(
      ownedPod('sbx-auto', uid, {
        spec: {
          containers: [
            {
              name: 'main',
              image: 'python:3.12',
              command: ['python', 'app.py'],
              args: ['--port', '8080'],
              readinessProbe: { exec: { command: ['ready'] } },
            },
          ],
        },
      }),
    );
    expect(names(pod.spec.initContainers)).toEqual(['agent-runtime', 'csi-sidecar']);
    const main = pod.spec.containers[0] as Json;
    expect(main.command).toEqual(['/bin/bash', '/var/sandbox/run_with_envs.sh', '--']);
    expect(main.args).toEqual(['python', 'app.py', '--port', '8080']);
    expect((main.readinessProbe as { exec: Json }).exec.command).toEqual([
      '/bin/bash',
      '/var/sandbox/run_with_envs.sh',
      '--probe',
      '--',
      'ready',
    ]);
    expect(names(main.env as Json[])).toEqual(['ENVD_DIR', 'RUNTIME', 'CSI_MOUNT_ROOT', 'LOG_LEVEL']);
    expect(names(main.volumeMounts as Json[])).toEqual(['envd-volume', 'csi-volume', 'sandbox-env']);
    expect(names(pod.spec.volumes)).toEqual(['envd-volume', 'csi-volume', 'csi-socket', 'sandbox-env']);
    expect(JSON.parse(pod.metadata.annotations?.[STATUS] ?? '{}')).toMatchObject({
      injected: ['agent-runtime', 'csi'],
      wrapped: ['main'],
    });
  });

  it('ignores runtime annotations on owned pods and on pods without an owner (no --allow-annotation-runtimes)', async () => {
    const uid = await createSandbox('sbx-none', []);
    const annotated = { metadata: { annotations: { 'agents.kruise.io/runtimes': 'agent-runtime' } } };
    const { pod } = await createOk(ownedPod('sbx-none', uid, annotated));
    expect(pod.spec.initContainers).toBeUndefined();
    const orphan = ownedPod('sbx-none', uid, annotated) as { metadata: Json };
    delete orphan.metadata.ownerReferences;
    expect((await createOk(orphan)).pod.spec.initContainers).toBeUndefined();
  });

  it('denies a pod whose owning Sandbox does not exist, naming it', async () => {
    const result = await create(ownedPod('ghost', '00000000-0000-0000-0000-000000000000'));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/owner Sandbox e2e-webhook\/ghost .*not found/);
  });

  it('answers dry-run requests like others: kubectl create --dry-run=server shows the mutation, stores nothing', async () => {
    const uid = await createSandbox('sbx-dry', ['agent-runtime']);
    const out = await c().kubectlOk(['create', '--dry-run=server', '-o', 'yaml', '-f', '-'], {
      input: JSON.stringify(ownedPod('sbx-dry', uid)),
    });
    const shown = parseYaml(out) as StoredPod;
    expect(names(shown.spec.initContainers)).toEqual(['agent-runtime']);
    const stored = await c().kubectlOk(['get', 'pods', '-n', NS, '-o', 'name']);
    expect(stored.split('\n').filter((line) => line.startsWith('pod/sbx-dry-'))).toEqual([]);
  });
});

describe('conformance cases replayed through kube-apiserver', () => {
  // 06 uses a ConfigMap of its own and 09 has none: both are covered by the config tests below. Cases with
  // serve flags of their own (`flags`) need a webhook started with them; the CLI and HTTPS suites run those.
  const withFlags = (k: ConformanceCase): boolean => ((k as { flags?: unknown[] }).flags ?? []).length > 0;
  const replayed = loadConformanceCases().filter(
    (k) => !k.file.startsWith('06-') && !k.file.startsWith('09-') && !withFlags(k),
  );

  beforeAll(async () => {
    // The cases share one ConfigMap, with a generic runtime that the example in manifests/ does not have.
    await c().applyObject(replayed[0]?.configMap);
    const uid = await createSandbox('case-config', ['traffic-proxy']);
    // Its template's annotation key has a `~`, which kube-apiserver refuses (case 14 below): seeing that
    // refusal is seeing the template injected.
    await eventually(ownedPod('case-config', uid), (_p, stderr) => stderr.includes(REFUSED_KEY));
  });

  for (const testCase of replayed) {
    it(testCase.file, async () => {
      const { runtimes, policy } = askedFor(testCase);
      const sandbox = `case-${testCase.file.slice(0, 2)}`;
      const uid = await createSandbox(sandbox, runtimes, policy);
      const result = await create(ownedPod(sandbox, uid, withoutName(testCase.pod)));
      if (testCase.file.startsWith('14-')) {
        // The webhook injects the template exactly as the case expects (the CLI and server suites check the
        // patch); kube-apiserver's own validation then refuses the `~` in the annotation key.
        expect(result.code).not.toBe(0);
        expect(result.stderr).toContain(`metadata.annotations: Invalid value: "${REFUSED_KEY}"`);
        return;
      }
      if (!testCase.expect.allowed) {
        expect(result.code).not.toBe(0);
        for (const word of testCase.expect.messageMentions ?? []) expect(result.stderr).toContain(word);
        return;
      }
      if (result.pod === undefined) throw new Error(result.stderr);
      const expected = ownedPod(sandbox, uid, withoutName(testCase.expect.pod ?? {})) as { metadata: Json };
      delete expected.metadata.generateName;
      expectSubset(result.pod, expected);
      // Every pod that asked for runtimes carries the status annotation, also when nothing else changed.
      expect(Object.hasOwn(result.pod.metadata.annotations ?? {}, STATUS)).toBe(runtimes.length > 0);
      if (testCase.expect.warnings !== undefined) expect(/Warning:/.test(result.stderr)).toBe(testCase.expect.warnings);
    });
  }
});

describe('the injection ConfigMap, watched', () => {
  const baseConfig = (): { data: Record<string, string> } & Json =>
    parseYaml(readFileSync(CONFIGMAP, 'utf8')) as { data: Record<string, string> } & Json;

  it('applies an update to the next admission, falls back on a bad key with a warning, and injects nothing once deleted', async () => {
    const uid = await createSandbox('sbx-config', ['agent-runtime']);
    const pod = ownedPod('sbx-config', uid);
    const hasEnv = (p: StoredPod | undefined, name: string): boolean =>
      names((p?.spec.containers[0]?.env as Json[] | undefined) ?? []).includes(name);

    const updated = baseConfig();
    const agent = JSON.parse(updated.data['agent-runtime'] ?? '{}') as { mainContainer: { env: Json[] } };
    agent.mainContainer.env.push({ name: 'E2E_MARK', value: 'v2' });
    updated.data['agent-runtime'] = JSON.stringify(agent);
    const appliedAt = Date.now();
    await c().applyObject(updated);
    await eventually(pod, (p) => hasEnv(p, 'E2E_MARK'));
    console.info(`ConfigMap update took effect within ${Date.now() - appliedAt} ms of kubectl apply returning`);

    const broken = structuredClone(updated);
    broken.data['agent-runtime'] = '{"csiSidecar": [';
    await c().applyObject(broken);
    await eventually(pod, (_p, stderr) => /Warning: .*agent-runtime.*last valid version/.test(stderr));
    const fallback = await createOk(pod);
    expect(hasEnv(fallback.pod, 'E2E_MARK')).toBe(true);
    expect(fallback.stderr).toMatch(/Warning: .*key "agent-runtime" is invalid, using its last valid version/);

    await c().kubectlOk(['delete', 'configmap', '-n', CONFIG_NS, 'sandbox-injection-config']);
    await eventually(pod, (p) => p !== undefined && p.spec.initContainers === undefined);
    const unchanged = await createOk(pod);
    expect(unchanged.pod.spec.initContainers).toBeUndefined();
    expect(unchanged.pod.metadata.annotations?.[STATUS]).toBeUndefined();

    await c().applyObject(baseConfig());
    await eventually(pod, (p) => names(p?.spec.initContainers).includes('agent-runtime') && !hasEnv(p, 'E2E_MARK'));
  });
});

describe('reinvocation', () => {
  let second: Server | undefined;

  afterAll(async () => {
    await c().kubectl(['delete', 'mutatingwebhookconfiguration', 'zz-second-webhook', '--ignore-not-found']);
    await new Promise<void>((resolve) => (second === undefined ? resolve() : second.close(() => resolve())));
  });

  it('a later webhook that changes the pod makes kube-apiserver call ours again; the pod is injected once', async () => {
    const cert = createServingCert(webhook.ca, { commonName: '127.0.0.1', dnsNames: [], ipAddresses: ['127.0.0.1'] });
    second = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          request: { uid: string; object: StoredPod };
        };
        const labels = review.request.object.metadata.labels ?? {};
        const patch = Object.hasOwn(labels, 'e2e/second')
          ? []
          : [{ op: 'add', path: '/metadata/labels/e2e~1second', value: 'yes' }];
        const response: Json = { uid: review.request.uid, allowed: true };
        if (patch.length > 0)
          Object.assign(response, {
            patchType: 'JSONPatch',
            patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
          });
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
      });
    });
    const port = await new Promise<number>((resolve) =>
      second?.listen(0, '127.0.0.1', () => {
        const address = second?.address();
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      }),
    );
    const config = webhookConfiguration('zz-second-webhook', `https://127.0.0.1:${port}/`, webhook.ca.certPem) as {
      webhooks: Json[];
    };
    const [entry] = config.webhooks;
    if (entry !== undefined) entry.reinvocationPolicy = 'Never';
    await c().applyObject(config);

    const uid = await createSandbox('sbx-reinvoke', ['agent-runtime', 'csi'], 'Auto');
    const pod = ownedPod('sbx-reinvoke', uid, { metadata: { generateName: 'reinvoke-' } });
    await eventually(pod, (p) => p?.metadata.labels?.['e2e/second'] === 'yes');
    const isReinvoke = (l: Json): boolean => l.msg === 'admission' && l.pod === 'reinvoke-';
    const before = webhook.logs.filter(isReinvoke).length;
    const { pod: stored } = await createOk(pod);
    // Log lines are written a little after the answer: wait for both calls' lines, with a deadline.
    const calls = (await webhook.logged(isReinvoke, 'admissions of reinvoke-', before + 2)).length - before;

    expect(stored.metadata.labels?.['e2e/second']).toBe('yes');
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(names(stored.spec.initContainers)).toEqual(['agent-runtime', 'csi-sidecar']);
    const main = stored.spec.containers[0] as Json;
    expect(names(main.env as Json[])).toEqual(['ENVD_DIR', 'RUNTIME', 'CSI_MOUNT_ROOT', 'LOG_LEVEL']);
    expect(main.command).toEqual(['/bin/bash', '/var/sandbox/run_with_envs.sh', '--']);
    expect(main.args).toEqual(['python', 'app.py']);
  });
});

describe('the webhook process stopped', () => {
  it('Fail refuses pod creation, Ignore admits it unchanged, and injection resumes after a restart', async () => {
    const uid = await createSandbox('sbx-down', ['agent-runtime']);
    const pod = ownedPod('sbx-down', uid);
    await webhook.stop();

    const refused = await create(pod);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/failed calling webhook/);

    await c().applyObject(webhookConfiguration('sandbox-injector-e2e', webhook.url, webhook.ca.certPem, 'Ignore'));
    await eventually(pod, (p) => p !== undefined);
    const admitted = await createOk(pod);
    expect(admitted.pod.spec.initContainers).toBeUndefined();

    await webhook.start();
    await c().applyObject(webhookConfiguration('sandbox-injector-e2e', webhook.url, webhook.ca.certPem, 'Fail'));
    await eventually(pod, (p) => names(p?.spec.initContainers).includes('agent-runtime'));
    expect(names((await createOk(pod)).pod.spec.initContainers)).toEqual(['agent-runtime']);
  });
});

/** A case's pod without its fixed name: pods of several cases share one namespace here, so they get generated names. */
function withoutName(pod: Json): Json {
  const copy = structuredClone(pod) as { metadata?: Json };
  if (copy.metadata !== undefined) delete copy.metadata.name;
  return copy;
}

function askedFor(testCase: ConformanceCase): { runtimes: string[]; policy: string | undefined } {
  const annotations = ((testCase.pod.metadata as Json | undefined)?.annotations ?? {}) as Record<string, string>;
  const runtimes = (annotations['agents.kruise.io/runtimes'] ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  return { runtimes, policy: annotations['agents.kruise.io/env-vars-injection-policy'] };
}
