// `sandbox-injector explain` against a real kube-apiserver: the webhook configuration is exactly what
// `kubectl kustomize manifests/` renders (clientConfig pointed at a real `serve` process), so explain judges the
// shipped selectors, and every pod it explains is then created for real so its answer can be compared with the
// status the webhook actually recorded.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import fastJsonPatch from 'fast-json-patch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import type { Explanation } from '../../src/cli/explain/explanation.js';
import type { Pod } from '../../src/injection/index.js';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { at } from './support/json.js';
import { podFromSandbox, type SandboxObject } from './support/sandbox-controller.js';
import { startWebhookProcess, type WebhookProcess } from './support/webhook-process.js';
import { untilWebhookCalled } from './support/readiness.js';
import type { KubectlResult as Run } from './support/kubectl.js';

const NS = 'e2e-explain';
const CONFIG_NS = 'sandbox-system';
const CONFIGMAP = path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml');
const MANIFESTS = path.join(repoRoot, 'manifests');
const CLI = path.join(repoRoot, 'dist', 'cli', 'main.js');
const STATUS = 'agents.kruise.io/runtime-injection-status';
const POLICY = 'agents.kruise.io/env-vars-injection-policy';
const WRAPPER_IMAGE = 'registry.example.com/sandbox-injector:e2e-wrapper';

type Json = Record<string, unknown>;

let cluster: TestCluster;
let webhook: WebhookProcess;

function c(): TestCluster {
  return cluster;
}

function explain(args: string[]): Promise<Run> {
  const all = [CLI, 'explain', '--kubeconfig', c().kubeconfigPath, '--wrapper-image', WRAPPER_IMAGE, ...args];
  return new Promise((resolve) => {
    execFile(process.execPath, all, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

async function explainJson(args: string[]): Promise<Explanation> {
  const run = await explain([...args, '-o', 'json']);
  if (run.code !== 0) throw new Error(`explain ${args.join(' ')} failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Explanation;
}

async function createSandbox(
  name: string,
  runtimes: string[],
  options: { annotations?: Record<string, string>; containers?: Json[]; initContainers?: Json[] } = {},
): Promise<SandboxObject> {
  const sandbox = {
    apiVersion: 'agents.kruise.io/v1alpha1',
    kind: 'Sandbox',
    metadata: {
      name,
      namespace: NS,
      ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
    },
    spec: {
      runtimes: runtimes.map((r) => ({ name: r })),
      template: {
        metadata: { labels: { app: name } },
        spec: {
          automountServiceAccountToken: false,
          containers: options.containers ?? [{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }],
          ...(options.initContainers === undefined ? {} : { initContainers: options.initContainers }),
        },
      },
    },
  };
  return JSON.parse(
    await c().kubectlOk(['create', '-f', '-', '-o', 'json'], { input: JSON.stringify(sandbox) }),
  ) as SandboxObject;
}

async function createPod(pod: Json): Promise<Pod> {
  return JSON.parse(await c().kubectlOk(['create', '-f', '-', '-o', 'json'], { input: JSON.stringify(pod) })) as Pod;
}

/** The fates and the config revision as the status annotation records them, from an explanation. */
function statusFrom(explanation: Explanation): Json {
  const fates = explanation.runtimes;
  return {
    injected: fates.filter((f) => f.fate === 'injected').map((f) => f.runtime),
    present: fates.filter((f) => f.fate === 'present').map((f) => f.runtime),
    skipped: fates.flatMap((f) =>
      f.fate === 'skipped' ? [{ runtime: f.runtime, reason: f.reason, message: f.message }] : [],
    ),
    wrapped: explanation.wrapped,
    ...(explanation.revision.admitted === undefined ? {} : { revision: explanation.revision.admitted }),
  };
}

const statusOf = (pod: Pod): unknown => JSON.parse(pod.metadata.annotations?.[STATUS] ?? 'null');

beforeAll(async () => {
  cluster = await startCluster();
  await c().installSandboxCrd();
  await c().ensureNamespace(NS);
  await c().ensureNamespace(CONFIG_NS);
  await c().applyObject(parseYaml(readFileSync(CONFIGMAP, 'utf8')));

  webhook = await startWebhookProcess(cluster, { extraArgs: ['--wrapper-image', WRAPPER_IMAGE] });
  const docs = parseAllDocuments(await c().kubectlOk(['kustomize', MANIFESTS])).map((d) => d.toJS() as Json);
  const rendered = docs.find((d) => d.kind === 'MutatingWebhookConfiguration');
  if (rendered === undefined) throw new Error('kubectl kustomize manifests/ rendered no MutatingWebhookConfiguration');
  for (const entry of at(rendered, 'webhooks') as Json[]) {
    entry.clientConfig = { url: webhook.url, caBundle: Buffer.from(webhook.ca.certPem).toString('base64') };
  }
  await c().applyObject(rendered);
  const warmup = podFromSandbox(await createSandbox('warmup', []));
  await untilWebhookCalled('the webhook', async () => {
    await c().kubectl(['create', '-f', '-', '--dry-run=server'], { input: JSON.stringify(warmup) });
    return webhook.logs.some((l) => l.msg === 'admission' && l.pod === 'warmup') || 'no admission line yet';
  });
});

afterAll(async () => {
  await webhook?.stop();
  await cluster?.stop();
});

describe('explain a selected pod', () => {
  it('--sandbox before the pod exists predicts what the webhook then records and patches', async () => {
    const sandbox = await createSandbox('sbx-selected', ['agent-runtime', 'csi'], {
      annotations: { [POLICY]: 'Auto' },
    });
    const predicted = await explainJson(['--sandbox', `${NS}/sbx-selected`]);
    expect(predicted.origin).toBe(`the pod Sandbox ${NS}/sbx-selected's controller would create`);
    expect(predicted.webhook).toMatchObject({ state: 'checked', configuration: 'sandbox-injector', selected: true });
    expect(predicted.selection).toEqual({
      runtimes: ['agent-runtime', 'csi'],
      runtimesFrom: `Sandbox ${NS}/sbx-selected: spec.runtimes`,
      policy: 'Auto',
      policyFrom: `Sandbox ${NS}/sbx-selected: annotation ${POLICY}`,
    });
    expect(predicted.configMap).toEqual({
      name: `${CONFIG_NS}/sandbox-injection-config`,
      exists: true,
      keys: [
        { key: 'agent-runtime', state: 'valid' },
        { key: 'csi', state: 'valid' },
      ],
    });
    expect(predicted.runtimes.map((r) => r.fate)).toEqual(['injected', 'injected']);

    // The pod the controller creates, here without its own injection, so the webhook injects as predicted.
    const sent = podFromSandbox(sandbox) as unknown as Pod;
    const stored = await createPod(sent);
    expect(statusOf(stored)).toEqual(statusFrom(predicted));
    const admitted = fastJsonPatch.applyPatch(structuredClone(sent), predicted.patch, true, false).newDocument;
    const names = (pod: Pod): unknown => [
      pod.spec.initContainers?.map((x) => [x.name, x.image]),
      pod.spec.volumes?.map((x) => x.name),
    ];
    expect(names(admitted)).toEqual(names(stored));
    expect(admitted.spec.containers[0]?.command).toEqual(stored.spec.containers[0]?.command);
  });

  it('--pod of the created pod reads its recorded fates, with no patch left to apply', async () => {
    const explained = await explainJson(['--pod', `${NS}/sbx-selected`]);
    expect(explained.webhook).toMatchObject({ selected: true });
    expect(explained.runtimes).toEqual([
      { runtime: 'agent-runtime', fate: 'injected', earlier: true },
      { runtime: 'csi', fate: 'injected', earlier: true },
    ]);
    expect(explained.patch).toEqual([]);
    const text = await explain(['--sandbox', `${NS}/sbx-selected`]);
    expect(text.stdout).toContain(
      `Pod ${NS}/sbx-selected (the pod of Sandbox ${NS}/sbx-selected, reviewed as if created now)`,
    );
    expect(text.stdout).toContain('  agent-runtime: injected (recorded by an earlier admission)');
    expect(text.stdout).toContain('Patch: none, the pod is admitted as it is');
  });
});

describe('explain an unselected pod', () => {
  it('names the objectSelector term a Sandbox-owned pod without the created-by label fails', async () => {
    const sandbox = await createSandbox('sbx-unlabelled', ['csi']);
    const pod = podFromSandbox(sandbox) as { metadata: { labels: Record<string, string> } };
    delete pod.metadata.labels['agents.kruise.io/created-by'];
    const stored = await createPod(pod);
    expect(stored.metadata.annotations?.[STATUS]).toBeUndefined();

    const explained = await explainJson(['--pod', `${NS}/sbx-unlabelled`]);
    expect(explained.webhook).toMatchObject({
      state: 'checked',
      selected: false,
      webhooks: [
        {
          webhook: 'sandbox-injector.agents.kruise.io',
          selected: false,
          objectSelector: {
            matches: false,
            failed: [
              {
                term: 'matchLabels agents.kruise.io/created-by=sandbox',
                reason: 'label agents.kruise.io/created-by is not set',
              },
            ],
          },
          namespaceSelector: { matches: true },
        },
      ],
    });
    // What the webhook would do if it were called: the server's review of the stored pod.
    expect(explained.runtimes).toEqual([{ runtime: 'csi', fate: 'injected', earlier: false }]);
    const text = await explain(['--pod', `${NS}/sbx-unlabelled`]);
    expect(text.stdout).toContain('NOT selected: kube-apiserver never calls the webhook for this pod');
    expect(text.stdout).toContain('Result if the webhook were called: injected');
  });

  it('names the namespaceSelector term for a pod file in kube-system, with the namespace labels the API server set', async () => {
    const file = path.join(c().dir, 'kube-system-pod.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'system-pod',
          namespace: 'kube-system',
          labels: { 'agents.kruise.io/created-by': 'sandbox' },
        },
        spec: { containers: [{ name: 'main', image: 'busybox' }] },
      }),
    );
    const explained = await explainJson(['-f', file]);
    expect(explained.webhook).toMatchObject({ selected: false });
    expect(at(explained.webhook, 'webhooks', 0, 'namespaceSelector', 'failed')).toEqual([
      {
        term: 'matchExpressions[0] kubernetes.io/metadata.name NotIn (sandbox-injector-system, kube-system)',
        reason: 'label kubernetes.io/metadata.name is "kube-system", one of the excluded values',
      },
    ]);
    expect(explained.selection).toMatchObject({ runtimes: [], runtimesFrom: 'no Sandbox owner' });
  });

  it('says so when the webhook configuration is not installed', async () => {
    const explained = await explainJson([
      '--pod',
      `${NS}/sbx-selected`,
      '--webhook-configuration',
      'not-installed-here',
    ]);
    expect(explained.webhook).toEqual({ state: 'not-installed', configuration: 'not-installed-here' });
  });
});

describe('explain a pod whose runtime is skipped', () => {
  it('gives the skip and its reason, before the pod exists and as the webhook recorded it', async () => {
    const sandbox = await createSandbox('sbx-skipped', ['agent-runtime', 'csi'], {
      initContainers: [{ name: 'agent-runtime', image: 'registry.example.com/our-own-agent:v9' }],
    });
    const predicted = await explainJson(['--sandbox', `${NS}/sbx-skipped`]);
    expect(predicted.runtimes).toEqual([
      {
        runtime: 'agent-runtime',
        fate: 'skipped',
        reason: 'container-name-conflict',
        message: expect.any(String) as unknown,
        earlier: false,
      },
      { runtime: 'csi', fate: 'injected', earlier: false },
    ]);
    expect(predicted.warnings.some((w) => w.startsWith(`Sandbox ${NS}/sbx-skipped: agent-runtime: skipped`))).toBe(
      true,
    );

    const stored = await createPod(podFromSandbox(sandbox));
    expect(statusOf(stored)).toEqual(statusFrom(predicted));
    const explained = await explainJson(['--pod', `${NS}/sbx-skipped`]);
    expect(explained.runtimes[0]).toMatchObject({
      runtime: 'agent-runtime',
      fate: 'skipped',
      reason: 'container-name-conflict',
      earlier: true,
    });
    const text = await explain(['--pod', `${NS}/sbx-skipped`]);
    expect(text.stdout).toMatch(
      /^ {2}agent-runtime: skipped, container-name-conflict: .+ \(recorded by an earlier admission\)$/m,
    );
  });
});

describe('explain the config', () => {
  it('reports a key that is bad now as invalid, and a missing ConfigMap as missing', async () => {
    await c().applyObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'explain-broken', namespace: CONFIG_NS },
      data: { 'agent-runtime': '{"csiSidecar": "not a list"}' },
    });
    const broken = await explainJson(['--sandbox', `${NS}/sbx-selected`, '--config-name', 'explain-broken']);
    expect(broken.configMap.keys).toEqual([
      { key: 'agent-runtime', state: 'invalid', error: expect.any(String) as unknown },
      { key: 'csi', state: 'missing' },
    ]);
    expect(broken.denial).toMatchObject({ code: 'SI_RUNTIME_CONFIG_UNUSABLE' });
    expect(broken.notes.some((n) => n.startsWith('the ConfigMap is read once'))).toBe(true);

    const absent = await explainJson(['--sandbox', `${NS}/sbx-selected`, '--config-name', 'no-such-config']);
    expect(absent.configMap).toEqual({ name: `${CONFIG_NS}/no-such-config`, exists: false, keys: [] });
  });

  it('fails with a message for a pod or Sandbox that does not exist', async () => {
    const pod = await explain(['--pod', `${NS}/nobody`]);
    expect(pod.code).toBe(1);
    expect(pod.stderr).toContain(`pod ${NS}/nobody not found`);
    const sandbox = await explain(['--sandbox', `${NS}/nobody`]);
    expect(sandbox.stderr).toContain(`Sandbox ${NS}/nobody not found`);
  });
});
