// The webhook next to the OpenKruise Agents Sandbox controller as it runs today, on a real kube-apiserver:
//   - the Sandbox CRD has today's schema (test/fixtures/e2e/sandbox-crd-upstream.yaml): no
//     spec.envVarsInjectionPolicy, so kube-apiserver prunes it;
//   - the tests play the controller (support/sandbox-controller.ts): each pod is built from the stored Sandbox
//     the way GeneratePodFromSandbox builds it, with the runtimes already injected from the same ConfigMap;
//   - the MutatingWebhookConfiguration is exactly what `kubectl kustomize manifests/` renders, with only its
//     clientConfig pointed at the webhook process, so the objectSelector under test is the shipped one.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { at } from './support/json.js';
import { CREATED_BY, podFromSandbox, type SandboxObject } from './support/sandbox-controller.js';
import { startWebhookProcess, type WebhookProcess } from './support/webhook-process.js';
import { untilWebhookCalled } from './support/readiness.js';

const NS = 'e2e-controller';
const CONFIG_NS = 'sandbox-system';
const CRD = path.join(repoRoot, 'test', 'fixtures', 'e2e', 'sandbox-crd-upstream.yaml');
const CONFIGMAP = path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml');
const MANIFESTS = path.join(repoRoot, 'manifests');
const STATUS = 'agents.kruise.io/runtime-injection-status';
const POLICY = 'agents.kruise.io/env-vars-injection-policy';
const WRAPPER_IMAGE = 'registry.example.com/sandbox-injector:e2e-wrapper';
const WRAPPED_COMMAND = ['/bin/bash', '/var/sandbox/run_with_envs.sh', '--'];

type Json = Record<string, unknown>;
interface ConfigMapObject extends Json {
  data: Record<string, string>;
}
interface StoredPod {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: Json[]; initContainers?: Json[]; volumes?: Json[] } & Json;
}
interface Status {
  injected?: string[];
  present?: string[];
  skipped?: { runtime: string; reason: string; message: string }[];
  wrapped?: string[];
  revision?: string;
}

let cluster: TestCluster;
let webhook: WebhookProcess;
let plainConfig: ConfigMapObject;
/** The webhook configuration as `kubectl kustomize manifests/` renders it. */
let rendered: Json;
/** A Sandbox whose pod is dry-run to see which webhook process kube-apiserver calls. */
let warmup: SandboxObject;

function c(): TestCluster {
  return cluster;
}

const readPlainConfig = (): ConfigMapObject => parseYaml(readFileSync(CONFIGMAP, 'utf8')) as ConfigMapObject;
const names = (list: unknown): unknown[] => (Array.isArray(list) ? (list as Json[]).map((x) => x.name) : []);

interface SandboxInput {
  runtimes: string[];
  annotations?: Record<string, string>;
  templateAnnotations?: Record<string, string>;
  containers?: Json[];
  /** Extra fields of spec, e.g. the proposal's envVarsInjectionPolicy; needs validate false on today's CRD. */
  extraSpec?: Json;
}

/** Creates a Sandbox and returns it as stored, which is what the controller reads and builds the pod from. */
async function createSandbox(name: string, input: SandboxInput, validate = true): Promise<SandboxObject> {
  const sandbox = {
    apiVersion: 'agents.kruise.io/v1alpha1',
    kind: 'Sandbox',
    metadata: { name, namespace: NS, ...(input.annotations === undefined ? {} : { annotations: input.annotations }) },
    spec: {
      runtimes: input.runtimes.map((r) => ({ name: r })),
      template: {
        metadata: {
          labels: { app: name },
          annotations: { 'example.com/team': 'e2e', ...(input.templateAnnotations ?? {}) },
        },
        spec: {
          // Without a token volume the stored pod holds only what the template, the controller and the webhook
          // put there, so pods of different Sandboxes can be compared.
          automountServiceAccountToken: false,
          containers: input.containers ?? [{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }],
        },
      },
      ...(input.extraSpec ?? {}),
    },
  };
  const args = ['create', '-f', '-', '-o', 'json', ...(validate ? [] : ['--validate=false'])];
  return JSON.parse(await c().kubectlOk(args, { input: JSON.stringify(sandbox) })) as SandboxObject;
}

async function createPod(pod: Json, extra: string[] = []): Promise<{ code: number; stderr: string; pod?: StoredPod }> {
  const result = await c().kubectl(['create', '-f', '-', '-o', 'json', ...extra], { input: JSON.stringify(pod) });
  return {
    code: result.code,
    stderr: result.stderr,
    pod: result.code === 0 ? (JSON.parse(result.stdout) as StoredPod) : undefined,
  };
}

async function createPodOk(pod: Json): Promise<{ stderr: string; pod: StoredPod }> {
  const result = await createPod(pod);
  if (result.pod === undefined) throw new Error(`pod refused: ${result.stderr}`);
  return { stderr: result.stderr, pod: result.pod };
}

function statusOf(pod: StoredPod): Status | undefined {
  const raw = pod.metadata.annotations?.[STATUS];
  return raw === undefined ? undefined : (JSON.parse(raw) as Status);
}

/** The `admission` log lines for a pod of NS, of the main webhook process or of `from`. */
const admissionLines = (pod: string, from: WebhookProcess = webhook): Json[] =>
  from.logs.filter((l) => l.msg === 'admission' && l.namespace === NS && l.pod === pod);

/** The admission log line of `pod`; log lines reach us a little after kube-apiserver has the answer. */
async function admissionLine(pod: string, from: WebhookProcess = webhook): Promise<Json> {
  const [line] = await from.logged(
    (l) => l.msg === 'admission' && l.namespace === NS && l.pod === pod,
    `admission of ${NS}/${pod}`,
  );
  return line ?? {};
}

/** The shipped configuration with only clientConfig changed: our process, trusted through its CA. */
function pointedAtProcess(config: Json, url: string, caPem: string): Json {
  const copy = structuredClone(config);
  const webhooks = at(copy, 'webhooks');
  if (!Array.isArray(webhooks) || webhooks.length === 0) throw new Error('rendered configuration has no webhooks');
  for (const entry of webhooks as Json[]) entry.clientConfig = { url, caBundle: Buffer.from(caPem).toString('base64') };
  return copy;
}

beforeAll(async () => {
  cluster = await startCluster();
  await c().installSandboxCrd(CRD);
  await c().ensureNamespace(NS);
  await c().ensureNamespace(CONFIG_NS);
  plainConfig = readPlainConfig();
  await c().applyObject(plainConfig);

  webhook = await startWebhookProcess(cluster, { extraArgs: ['--wrapper-image', WRAPPER_IMAGE] });
  const docs = parseAllDocuments(await c().kubectlOk(['kustomize', MANIFESTS])).map((d) => d.toJS() as Json);
  const found = docs.find((d) => d.kind === 'MutatingWebhookConfiguration');
  if (found === undefined) throw new Error('kubectl kustomize manifests/ rendered no MutatingWebhookConfiguration');
  rendered = found;
  await c().applyObject(pointedAtProcess(rendered, webhook.url, webhook.ca.certPem));

  warmup = await createSandbox('warmup', { runtimes: ['agent-runtime'] });
  await pointAt(webhook);
});

/**
 * Installs the shipped configuration pointed at `target`. kube-apiserver picks the change up asynchronously:
 * dry-run a controller's pod until that process logs that it was called for it.
 */
async function pointAt(target: WebhookProcess): Promise<void> {
  await c().applyObject(pointedAtProcess(rendered, target.url, target.ca.certPem));
  const pod = podFromSandbox(warmup, { configData: plainConfig.data });
  await untilWebhookCalled(`${target.url} for a Sandbox pod`, async () => {
    await createPod(pod, ['--dry-run=server']);
    return admissionLines('warmup', target).length > 0 || 'no admission line yet';
  });
}

afterAll(async () => {
  await webhook?.stop();
  await cluster?.stop();
});

describe("today's Sandbox CRD", () => {
  it('refuses spec.envVarsInjectionPolicy under field validation and prunes it with --validate=false', async () => {
    const sandbox = {
      apiVersion: 'agents.kruise.io/v1alpha1',
      kind: 'Sandbox',
      metadata: { name: 'sbx-pruned-field', namespace: NS },
      spec: {
        runtimes: [{ name: 'agent-runtime' }],
        envVarsInjectionPolicy: 'Auto',
        template: { spec: { containers: [{ name: 'main', image: 'busybox' }] } },
      },
    };
    const strict = await c().kubectl(['create', '-f', '-'], { input: JSON.stringify(sandbox) });
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toContain('unknown field "spec.envVarsInjectionPolicy"');

    await c().kubectlOk(['create', '--validate=false', '-f', '-'], { input: JSON.stringify(sandbox) });
    const stored = JSON.parse(
      await c().kubectlOk(['get', 'sandbox', '-n', NS, 'sbx-pruned-field', '-o', 'json']),
    ) as Json;
    expect(at(stored, 'spec', 'envVarsInjectionPolicy')).toBeUndefined();
    expect(at(stored, 'spec', 'runtimes')).toEqual([{ name: 'agent-runtime' }]);
    expect(at(stored, 'spec', 'template', 'spec', 'containers', 0, 'image')).toBe('busybox');
  });
});

describe('the shipped webhook configuration', () => {
  it('is installed as rendered, only clientConfig changed, and selects the label the controller sets', async () => {
    const stored = JSON.parse(
      await c().kubectlOk([
        'get',
        'mutatingwebhookconfiguration',
        String(at(rendered, 'metadata', 'name')),
        '-o',
        'json',
      ]),
    ) as Json;
    const withoutClient = (config: Json): unknown =>
      (at(config, 'webhooks') as Json[]).map((w) =>
        Object.fromEntries(Object.entries(w).filter(([k]) => k !== 'clientConfig')),
      );
    expect(withoutClient(stored)).toEqual(withoutClient(rendered));
    // Either spelling of the selector; what matters is that the controller's label is what it asks for.
    const selector = at(rendered, 'webhooks', 0, 'objectSelector');
    const byLabels = at(selector, 'matchLabels', CREATED_BY);
    const byExpression = (at(selector, 'matchExpressions') as Json[] | undefined)?.find((e) => e.key === CREATED_BY);
    expect(
      byLabels === 'sandbox' ||
        (byExpression?.operator === 'In' && JSON.stringify(byExpression.values) === '["sandbox"]'),
    ).toBe(true);
  });
});

describe('pods as the Sandbox controller creates them', () => {
  it('are sent to the webhook; runtimes the controller injected are present: unchanged, no warning, recorded', async () => {
    const sandbox = await createSandbox('sbx-present', { runtimes: ['agent-runtime', 'csi'] });
    const pod = podFromSandbox(sandbox, { configData: plainConfig.data });
    const sent = pod as unknown as StoredPod;
    const { pod: stored, stderr } = await createPodOk(pod);

    expect(stderr).not.toMatch(/Warning:/);
    expect(statusOf(stored)).toEqual({
      injected: [],
      present: ['agent-runtime', 'csi'],
      skipped: [],
      wrapped: [],
      revision: expect.stringMatching(/^sha256:[0-9a-f]{16}$/) as unknown,
    });
    expect(names(stored.spec.initContainers)).toEqual(['agent-runtime', 'csi-sidecar']);
    expect(names(stored.spec.initContainers)).toEqual(names(sent.spec.initContainers));
    expect(names(stored.spec.containers[0]?.env)).toEqual(names(sent.spec.containers[0]?.env));
    expect(names(stored.spec.containers[0]?.volumeMounts)).toEqual(names(sent.spec.containers[0]?.volumeMounts));
    expect(names(stored.spec.volumes)).toEqual(names(sent.spec.volumes));
    expect(stored.spec.containers[0]?.command).toEqual(['python', 'app.py']);

    const line = await admissionLine('sbx-present');
    expect(line).toMatchObject({ runtimes: ['agent-runtime', 'csi'], warnings: 0, skipped: [] });
  });

  it('a sidecar of the same name with another image is a conflict, and the warning names the Sandbox', async () => {
    const sandbox = await createSandbox('sbx-old-image', { runtimes: ['agent-runtime'] });
    // The controller injected from an older version of the config (another agent-runtime image).
    const older = structuredClone(plainConfig.data);
    older['agent-runtime'] = (older['agent-runtime'] ?? '').replace('agent-runtime:v0.3.0', 'agent-runtime:v0.2.0');
    expect(older['agent-runtime']).toContain('agent-runtime:v0.2.0');
    const { pod: stored, stderr } = await createPodOk(podFromSandbox(sandbox, { configData: older }));

    expect(stderr).toMatch(new RegExp(`Warning: Sandbox ${NS}/sbx-old-image: .*agent-runtime`));
    const status = statusOf(stored);
    expect(status?.present ?? []).toEqual([]);
    expect(status?.skipped?.map((s) => [s.runtime, s.reason])).toEqual([['agent-runtime', 'container-name-conflict']]);
    expect(stored.spec.initContainers?.map((c) => c.image)).toEqual(['registry.example.com/agent-runtime:v0.2.0']);
    expect((await admissionLine('sbx-old-image')).warnings).toBe(1);
  });

  it('takes runtimes only from the Sandbox: a runtime annotation in the template adds nothing', async () => {
    const sandbox = await createSandbox('sbx-annotated', {
      runtimes: ['agent-runtime'],
      templateAnnotations: { 'agents.kruise.io/runtimes': 'agent-runtime,csi' },
    });
    const { pod: stored } = await createPodOk(podFromSandbox(sandbox, { configData: plainConfig.data }));
    expect(stored.metadata.annotations?.['agents.kruise.io/runtimes']).toBe('agent-runtime,csi');
    expect(names(stored.spec.initContainers)).toEqual(['agent-runtime']);
    expect(statusOf(stored)).toMatchObject({ injected: [], present: ['agent-runtime'] });
  });

  it('a pod without the created-by label is never sent to the webhook', async () => {
    const sandbox = await createSandbox('sbx-unlabelled', { runtimes: ['agent-runtime'] });
    const pod = podFromSandbox(sandbox) as { metadata: { labels: Record<string, string> } } & Json;
    delete pod.metadata.labels[CREATED_BY];
    const { pod: stored } = await createPodOk(pod);
    expect(stored.metadata.annotations?.[STATUS]).toBeUndefined();
    expect(stored.spec.initContainers).toBeUndefined();

    // Admissions are answered in order: once a labelled pod created afterwards has its log line, a call for
    // the unlabelled one would have logged too.
    const after = await createSandbox('sbx-labelled-after', { runtimes: ['agent-runtime'] });
    const { pod: labelled } = await createPodOk(podFromSandbox(after));
    await admissionLine('sbx-labelled-after');
    expect(statusOf(labelled)?.injected).toEqual(['agent-runtime']);
    expect(admissionLines('sbx-unlabelled')).toEqual([]);
  });
});

describe('EnvVarsInjectionPolicy Auto in cluster mode', () => {
  const containers = [
    {
      name: 'main',
      image: 'python:3.12',
      command: ['python', 'app.py'],
      args: ['--port', '8080'],
      readinessProbe: { exec: { command: ['ready'] } },
    },
  ];

  function expectWrapped(stored: StoredPod, stderr: string): void {
    const main = stored.spec.containers[0];
    expect(main?.command).toEqual(WRAPPED_COMMAND);
    expect(main?.args).toEqual(['python', 'app.py', '--port', '8080']);
    expect(at(main, 'readinessProbe', 'exec', 'command')).toEqual([
      '/bin/bash',
      '/var/sandbox/run_with_envs.sh',
      '--probe',
      '--',
      'ready',
    ]);
    expect(names(main?.volumeMounts)).toContain('sandbox-env');
    expect(names(stored.spec.volumes)).toContain('sandbox-env');
    const wrapper = stored.spec.initContainers?.find((c) => c.name === 'sandbox-env-wrapper');
    expect(wrapper?.image).toBe(WRAPPER_IMAGE);
    expect(names(stored.spec.initContainers)).toContain('agent-runtime');
    expect(statusOf(stored)).toMatchObject({ present: ['agent-runtime'], wrapped: ['main'] });
    expect(stderr).not.toMatch(/Warning:/);
  }

  function expectNotWrapped(stored: StoredPod): void {
    expect(stored.spec.containers[0]?.command).toEqual(['python', 'app.py']);
    expect(names(stored.spec.volumes)).not.toContain('sandbox-env');
    expect(names(stored.spec.initContainers)).not.toContain('sandbox-env-wrapper');
    expect(statusOf(stored)?.wrapped).toEqual([]);
  }

  it("from the Sandbox's annotation (not copied onto the pod)", async () => {
    const sandbox = await createSandbox('sbx-auto-sandbox', {
      runtimes: ['agent-runtime'],
      annotations: { [POLICY]: 'Auto' },
      containers,
    });
    const pod = podFromSandbox(sandbox, { configData: plainConfig.data });
    expect(at(pod, 'metadata', 'annotations', POLICY)).toBeUndefined();
    const { pod: stored, stderr } = await createPodOk(pod);
    expectWrapped(stored, stderr);
  });

  it('from the template annotation the controller copies onto the pod', async () => {
    const sandbox = await createSandbox('sbx-auto-template', {
      runtimes: ['agent-runtime'],
      templateAnnotations: { [POLICY]: 'Auto' },
      containers,
    });
    const pod = podFromSandbox(sandbox, { configData: plainConfig.data });
    expect(at(pod, 'metadata', 'annotations', POLICY)).toBe('Auto');
    const { pod: stored, stderr } = await createPodOk(pod);
    expectWrapped(stored, stderr);
  });

  it("the Sandbox's annotation comes before the pod's: None on the Sandbox, Auto in the template, nothing wrapped", async () => {
    const sandbox = await createSandbox('sbx-auto-overruled', {
      runtimes: ['agent-runtime'],
      annotations: { [POLICY]: 'None' },
      templateAnnotations: { [POLICY]: 'Auto' },
      containers,
    });
    const { pod: stored } = await createPodOk(podFromSandbox(sandbox, { configData: plainConfig.data }));
    expectNotWrapped(stored);
  });

  it('spec.envVarsInjectionPolicy, pruned by the CRD, never reaches the webhook: nothing wrapped', async () => {
    const sandbox = await createSandbox(
      'sbx-auto-pruned',
      { runtimes: ['agent-runtime'], containers, extraSpec: { envVarsInjectionPolicy: 'Auto' } },
      false,
    );
    expect(at(sandbox, 'spec', 'envVarsInjectionPolicy')).toBeUndefined();
    const { pod: stored } = await createPodOk(podFromSandbox(sandbox, { configData: plainConfig.data }));
    expectNotWrapped(stored);
  });
});

describe('the wrapper image as the Deployment passes it (SANDBOX_INJECTOR_WRAPPER_IMAGE)', () => {
  const DEPLOYMENT_IMAGE = 'registry.example.com/sandbox-injector:from-env';
  let other: WebhookProcess | undefined;

  afterEach(async () => {
    await other?.stop();
    other = undefined;
  });

  afterAll(async () => {
    await pointAt(webhook);
  });

  async function autoPod(name: string, target: WebhookProcess): Promise<StoredPod> {
    await pointAt(target);
    const sandbox = await createSandbox(name, { runtimes: ['agent-runtime'], annotations: { [POLICY]: 'Auto' } });
    const { pod } = await createPodOk(podFromSandbox(sandbox, { configData: plainConfig.data }));
    await admissionLine(name, target);
    return pod;
  }

  it('adds the wrapper init container with that image', async () => {
    other = await startWebhookProcess(cluster, { env: { SANDBOX_INJECTOR_WRAPPER_IMAGE: DEPLOYMENT_IMAGE } });
    const stored = await autoPod('sbx-env-wrapper', other);
    expect(stored.spec.containers[0]?.command).toEqual(WRAPPED_COMMAND);
    expect(stored.spec.initContainers?.find((c) => c.name === 'sandbox-env-wrapper')?.image).toBe(DEPLOYMENT_IMAGE);
  });

  it('--agent-runtime-has-wrapper: commands still wrapped, no wrapper init container', async () => {
    other = await startWebhookProcess(cluster, {
      env: { SANDBOX_INJECTOR_WRAPPER_IMAGE: DEPLOYMENT_IMAGE },
      extraArgs: ['--agent-runtime-has-wrapper'],
    });
    const stored = await autoPod('sbx-has-wrapper', other);
    expect(stored.spec.containers[0]?.command).toEqual(WRAPPED_COMMAND);
    expect(names(stored.spec.volumes)).toContain('sandbox-env');
    expect(names(stored.spec.initContainers)).toEqual(['agent-runtime']);
  });
});

/**
 * A key of the injection config as Go's encoding/json writes the controller's structs: every field of the
 * config struct is written, `null` when empty; containers carry `resources: {}`; plus nulls for absent lists in
 * containers and hooks, as other Go structs marshal them. Go reads all of it back as the plain config.
 */
function goMarshalled(raw: string): string {
  const doc = JSON.parse(raw) as Json;
  for (const field of [
    'mainContainer',
    'csiSidecar',
    'volume',
    'annotations',
    'labels',
    'initContainers',
    'containers',
  ]) {
    doc[field] ??= null;
  }
  const container = (c: Json): void => {
    c.resources ??= {};
    for (const field of ['command', 'args', 'ports', 'envFrom']) c[field] ??= null;
  };
  const main = doc.mainContainer as Json | null;
  if (main !== null) {
    container(main);
    const lifecycle = main.lifecycle as Json | undefined;
    if (lifecycle !== undefined) lifecycle.preStop ??= null;
  }
  for (const sidecar of (doc.csiSidecar as Json[] | null) ?? []) container(sidecar);
  return JSON.stringify(doc);
}

describe('an injection ConfigMap written by Go code, with null for empty fields', () => {
  afterAll(async () => {
    await c().applyObject(readPlainConfig());
  });

  it('injects exactly like the plain one, on a freshly started webhook that never saw another version', async () => {
    // The controller reads the ConfigMap in its own namespace; when that is not ours it injects nothing and
    // the webhook injects everything. Both kinds of pod, first with the plain config.
    const make = async (
      prefix: string,
      configData: Record<string, string>,
    ): Promise<{ injected: StoredPod; present: StoredPod; stderr: string }> => {
      const bare = await createSandbox(`${prefix}-bare`, {
        runtimes: ['agent-runtime', 'csi'],
        templateAnnotations: { [POLICY]: 'Auto' },
      });
      const full = await createSandbox(`${prefix}-full`, { runtimes: ['agent-runtime', 'csi'] });
      const a = await createPodOk(podFromSandbox(bare));
      const b = await createPodOk(podFromSandbox(full, { configData }));
      return { injected: a.pod, present: b.pod, stderr: a.stderr + b.stderr };
    };
    const plain = await make('plain', plainConfig.data);
    expect(plain.stderr).not.toMatch(/Warning:/);
    expect(statusOf(plain.injected)).toMatchObject({ injected: ['agent-runtime', 'csi'], wrapped: ['main'] });
    expect(statusOf(plain.present)).toMatchObject({ present: ['agent-runtime', 'csi'] });

    const goStyle: ConfigMapObject = structuredClone(plainConfig);
    goStyle.data = Object.fromEntries(
      Object.entries(plainConfig.data).map(([key, value]) => [key, goMarshalled(value)]),
    );
    expect(goStyle.data['csi']).toContain('"initContainers":null');
    await c().applyObject(goStyle);
    await webhook.stop();
    // Ready means its first list of the ConfigMap succeeded: the Go-style version is the only one it knows.
    await webhook.start();

    const go = await make('go', goStyle.data);
    expect(go.stderr).not.toMatch(/Warning:/);
    expect(go.injected.spec).toEqual(plain.injected.spec);
    // The config revision is of the keys' content as parsed, where an added `resources: {}` is content
    // (docs/policy.md, "The config revision"): the rest of the record is the same.
    const record = (pod: StoredPod): Status => ({ ...statusOf(pod), revision: undefined });
    expect(record(go.injected)).toEqual(record(plain.injected));
    expect(go.present.spec).toEqual(plain.present.spec);
    expect(record(go.present)).toEqual(record(plain.present));
  });
});
