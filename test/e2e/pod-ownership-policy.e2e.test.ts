// manifests/components/pod-ownership-policy on a real kube-apiserver, with identities authenticated for real (a
// ServiceAccount token, a client certificate): a user who may create and patch pods but is not a trusted creator
// cannot make a pod look like a Sandbox's pod (controller ownerReference, created-by label, status annotation),
// on UPDATE, on a status update or on CREATE, and is told what was refused; the Sandbox controller's service
// account can; removing any of them stays allowed; and a Sandbox pod that the controller creates through the
// webhook keeps the status annotation the webhook wrote at admission.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { asYaml, renderWithComponents } from './support/components.js';
import { until } from './support/deliver-world.js';
import { certificateIdentity, serviceAccountIdentity, type Identity } from './support/identities.js';
import { at } from './support/json.js';
import type { KubectlResult } from './support/kubectl.js';
import { untilWebhookCalled } from './support/readiness.js';
import { startWebhookProcess, webhookConfiguration, type WebhookProcess } from './support/webhook-process.js';

const NS = 'e2e-ownership';
const CONFIG_NS = 'sandbox-system';
const CONTROLLER_SA = 'sandbox-controller-manager';
const CONTROLLER = `system:serviceaccount:${CONFIG_NS}:${CONTROLLER_SA}`;
const POLICY = 'sandbox-injector-pod-ownership';
const WEBHOOK = 'sandbox-injector-ownership';
const CREATED_BY = 'agents.kruise.io/created-by';
const STATUS = 'agents.kruise.io/runtime-injection-status';
const DENIED = `ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request`;

type Json = Record<string, unknown>;

let cluster: TestCluster | undefined;
let webhook: WebhookProcess | undefined;
let controller: Identity;
let mallory: Identity;
let sandboxUid = '';
let podCount = 0;

function c(): TestCluster {
  if (cluster === undefined) throw new Error('cluster not started');
  return cluster;
}

function w(): WebhookProcess {
  if (webhook === undefined) throw new Error('webhook not started');
  return webhook;
}

const sandboxOwner = (): Json => ({
  apiVersion: 'agents.kruise.io/v1alpha1',
  kind: 'Sandbox',
  name: 'sbx',
  uid: sandboxUid,
  controller: true,
  blockOwnerDeletion: true,
});

/** A pod with a fresh name; `metadata` is merged into its metadata. */
function pod(metadata: Json = {}): Json {
  podCount += 1;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `p${podCount}`, namespace: NS, ...metadata },
    spec: {
      automountServiceAccountToken: false,
      containers: [{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }],
    },
  };
}

async function create(who: Identity, object: Json): Promise<KubectlResult> {
  return who.kubectl(['create', '-f', '-', '-o', 'json'], { input: JSON.stringify(object) });
}

/** Creates `object` as `who` and returns its name; fails the test if it is refused. */
async function created(who: Identity, object: Json): Promise<string> {
  const result = await create(who, object);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return String(at(JSON.parse(result.stdout), 'metadata', 'name'));
}

function patch(who: Identity, name: string, ops: Json[], subresource?: string): Promise<KubectlResult> {
  return who.kubectl([
    '-n',
    NS,
    'patch',
    'pod',
    name,
    ...(subresource === undefined ? [] : [`--subresource=${subresource}`]),
    '--type=json',
    '-p',
    JSON.stringify(ops),
  ]);
}

async function metadataOf(name: string): Promise<Json> {
  return at(JSON.parse(await c().kubectlOk(['-n', NS, 'get', 'pod', name, '-o', 'json'])), 'metadata') as Json;
}

/** The three fields, each as the JSON patch that adds it to a pod that has no labels, annotations or owners. */
const ADDS = [
  {
    what: 'the controller ownerReference to Sandbox sbx',
    ops: (): Json[] => [{ op: 'add', path: '/metadata/ownerReferences', value: [sandboxOwner()] }],
  },
  {
    what: `the label ${CREATED_BY}`,
    ops: (): Json[] => [{ op: 'add', path: '/metadata/labels', value: { [CREATED_BY]: 'sandbox' } }],
  },
  {
    what: `the annotation ${STATUS}`,
    ops: (): Json[] => [{ op: 'add', path: '/metadata/annotations', value: { [STATUS]: '{"wrapped":["main"]}' } }],
  },
] as const;

const refusal = (user: string, what: string, name: string): string =>
  `${DENIED}: user "${user}" may not add or change ${what} of pod ${NS}/${name}: only the trusted creators may ` +
  '(--trusted-creators)';

/** A pod as the Sandbox controller makes it, with all three, created by the controller (trusted). */
async function ownedPod(): Promise<string> {
  return created(
    controller,
    pod({
      ownerReferences: [sandboxOwner()],
      labels: { [CREATED_BY]: 'sandbox', team: 'a' },
      annotations: { [STATUS]: '{"wrapped":["main"]}' },
    }),
  );
}

beforeAll(async () => {
  cluster = await startCluster();
  await c().installSandboxCrd();
  await c().ensureNamespace(NS);
  await c().ensureNamespace(CONFIG_NS);
  await c().kubectlOk([
    'apply',
    '-f',
    path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml'),
  ]);
  await c().kubectlOk(['-n', CONFIG_NS, 'create', 'serviceaccount', CONTROLLER_SA]);
  // The same rights on pods for both: whatever refuses one of them below is the policy, not RBAC.
  await c().kubectlOk([
    '-n',
    NS,
    'create',
    'role',
    'pod-editor',
    '--verb=create,get,patch,update',
    '--resource=pods,pods/status',
  ]);
  await c().kubectlOk([
    '-n',
    NS,
    'create',
    'rolebinding',
    'pod-editors',
    '--role=pod-editor',
    `--serviceaccount=${CONFIG_NS}:${CONTROLLER_SA}`,
    '--user=mallory',
  ]);
  controller = await serviceAccountIdentity(c(), CONFIG_NS, CONTROLLER_SA);
  mallory = certificateIdentity(c(), 'mallory');
  sandboxUid = String(
    at(
      JSON.parse(
        await c().kubectlOk(['create', '-f', '-', '-o', 'json'], {
          input: JSON.stringify({
            apiVersion: 'agents.kruise.io/v1alpha1',
            kind: 'Sandbox',
            metadata: { name: 'sbx', namespace: NS },
            spec: { runtimes: [{ name: 'agent-runtime' }], template: {} },
          }),
        }),
      ),
      'metadata',
      'uid',
    ),
  );

  // The component as a user's kustomization renders it, applied as `kubectl apply -k` would.
  const rendered = await renderWithComponents(c().binDir, ['pod-ownership-policy']);
  await c().kubectlOk(['apply', '-f', '-'], {
    input: asYaml(rendered.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))),
  });
  // kube-apiserver loads a new policy asynchronously: dry-run a claiming pod until the policy refuses it.
  await until('the policy to refuse a claiming pod', async () => {
    const dry = await mallory.kubectl(['create', '--dry-run=server', '-f', '-'], {
      input: JSON.stringify(pod({ ownerReferences: [sandboxOwner()] })),
    });
    return dry.code !== 0 && dry.stderr.includes(DENIED) ? true : undefined;
  });

  // The webhook, trusting the controller as the manifests do, for pods labelled for it.
  webhook = await startWebhookProcess(c(), { extraArgs: ['--trusted-creators', CONTROLLER] });
  await c().kubectlOk(['apply', '-f', '-'], {
    input: JSON.stringify(webhookConfiguration(WEBHOOK, webhook.url, webhook.ca.certPem)),
  });
  await untilWebhookCalled('the webhook', async () => {
    const dry = await controller.kubectl(['create', '--dry-run=server', '-f', '-', '-o', 'json'], {
      input: JSON.stringify(pod({ labels: { [CREATED_BY]: 'sandbox' }, ownerReferences: [sandboxOwner()] })),
    });
    if (dry.code !== 0) return dry.stderr;
    return at(JSON.parse(dry.stdout), 'metadata', 'annotations', STATUS) !== undefined || 'not injected yet';
  });
});

afterAll(async () => {
  await webhook?.stop();
  await cluster?.stop();
});

describe('the pod ownership policy on a real kube-apiserver', () => {
  it('is applied without a warning from the API server (CEL compiled, cost within the limits)', async () => {
    // The type-checking status is written by kube-controller-manager, which does not run here; warnings about
    // the expressions come back with the request itself.
    const rendered = await renderWithComponents(c().binDir, ['pod-ownership-policy']);
    const result = await c().kubectl(['apply', '--dry-run=server', '-f', '-'], {
      input: asYaml(rendered.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))),
    });
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  });

  it.each(ADDS)('refuses the untrusted user patching $what into a plain pod, naming it', async ({ what, ops }) => {
    const name = await created(mallory, pod());
    const result = await patch(mallory, name, ops());
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(refusal('mallory', what, name));
    expect(result.stderr).toContain('(Forbidden)');
    const metadata = await metadataOf(name);
    expect([metadata.ownerReferences, metadata.labels, metadata.annotations]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it.each(ADDS)('lets the trusted creator patch $what into a plain pod', async ({ ops }) => {
    const name = await created(mallory, pod());
    const result = await patch(controller, name, ops());
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('refuses the untrusted user all three at once in a status update (pods/status)', async () => {
    const name = await created(mallory, pod());
    const result = await patch(mallory, name, [...ADDS.flatMap((a) => a.ops())], 'status');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(DENIED);
    expect((await metadataOf(name)).labels).toBeUndefined();
  });

  it("refuses the untrusted user changing a Sandbox pod's label or annotation, or its owner to another Sandbox", async () => {
    const name = await ownedPod();
    const changes = [
      { what: `the label ${CREATED_BY}`, path: `/metadata/labels/${CREATED_BY.replace('/', '~1')}`, value: 'x' },
      { what: `the annotation ${STATUS}`, path: `/metadata/annotations/${STATUS.replace('/', '~1')}`, value: '{}' },
      {
        what: 'the controller ownerReference to Sandbox other',
        path: '/metadata/ownerReferences/0/name',
        value: 'other',
      },
    ];
    for (const { what, path: pointer, value } of changes) {
      const result = await patch(mallory, name, [{ op: 'replace', path: pointer, value }]);
      expect(result.code, what).not.toBe(0);
      expect(result.stderr).toContain(refusal('mallory', what, name));
    }
  });

  it("lets the untrusted user change the rest of a Sandbox pod's metadata, and remove all three", async () => {
    const name = await ownedPod();
    const other = await patch(mallory, name, [{ op: 'replace', path: '/metadata/labels/team', value: 'b' }]);
    expect({ code: other.code, stderr: other.stderr }).toEqual({ code: 0, stderr: '' });
    // What the garbage collector does to orphan a pod, and the same for the label and the annotation.
    for (const pointer of [
      '/metadata/ownerReferences',
      `/metadata/labels/${CREATED_BY.replace('/', '~1')}`,
      `/metadata/annotations/${STATUS.replace('/', '~1')}`,
    ]) {
      const result = await patch(mallory, name, [{ op: 'remove', path: pointer }]);
      expect({ pointer, code: result.code, stderr: result.stderr }).toEqual({ pointer, code: 0, stderr: '' });
    }
    const metadata = await metadataOf(name);
    expect(metadata.ownerReferences).toBeUndefined();
    expect(metadata.labels).toEqual({ team: 'b' });
    expect(metadata.annotations).toBeUndefined();
  });

  it('refuses the untrusted user creating a pod that carries the owner or the status (no label: the webhook never sees it)', async () => {
    const owned = pod({ ownerReferences: [sandboxOwner()] });
    const ownedResult = await create(mallory, owned);
    expect(ownedResult.code).not.toBe(0);
    expect(ownedResult.stderr).toContain(
      refusal('mallory', 'the controller ownerReference to Sandbox sbx', String(at(owned, 'metadata', 'name'))),
    );
    const annotated = pod({ annotations: { [STATUS]: '{"wrapped":["main"]}' } });
    const annotatedResult = await create(mallory, annotated);
    expect(annotatedResult.code).not.toBe(0);
    expect(annotatedResult.stderr).toContain(
      refusal('mallory', `the annotation ${STATUS}`, String(at(annotated, 'metadata', 'name'))),
    );
  });

  it("admits the Sandbox controller's pod through the webhook, with the status annotation the webhook wrote", async () => {
    const result = await create(
      controller,
      pod({ labels: { [CREATED_BY]: 'sandbox' }, ownerReferences: [sandboxOwner()] }),
    );
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    const stored = JSON.parse(result.stdout) as Json;
    expect(JSON.parse(String(at(stored, 'metadata', 'annotations', STATUS)))).toMatchObject({
      injected: ['agent-runtime'],
    });
    const name = String(at(stored, 'metadata', 'name'));
    const [line] = await w().logged(
      (l) => l.msg === 'admission' && l.namespace === NS && l.pod === name,
      `the admission of ${name}`,
    );
    expect(line).toMatchObject({ decision: 'injected' });
  });
});
