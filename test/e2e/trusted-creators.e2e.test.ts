// --trusted-creators on a real kube-apiserver: two identities with the same right to create pods, each
// authenticated for real (a ServiceAccount token, client certificates), so the userInfo the webhook judges is the
// one kube-apiserver computed. Only the Sandbox controller's service account (and a trusted group) may create a
// pod that claims a Sandbox owner; anyone else's such pod is refused, naming them.
import { request } from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { certificateIdentity, serviceAccountIdentity, type Identity } from './support/identities.js';
import { startWebhookProcess, webhookConfiguration, type WebhookProcess } from './support/webhook-process.js';
import { untilWebhookCalled } from './support/readiness.js';

const NS = 'e2e-trusted';
const CONFIG_NS = 'sandbox-system';
const CONTROLLER_SA = 'sandbox-controller-manager';
const CONTROLLER = `system:serviceaccount:${CONFIG_NS}:${CONTROLLER_SA}`;
const TRUSTED_GROUP = 'e2e-sandbox-controllers';
const WEBHOOK = 'sandbox-injector-trust';
const CONFIGMAP = path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml');
const STATUS = 'agents.kruise.io/runtime-injection-status';
const CREATED_BY = 'agents.kruise.io/created-by';

type Json = Record<string, unknown>;
interface StoredPod {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { initContainers?: Json[] };
}

let cluster: TestCluster;
let webhook: WebhookProcess;
let controller: Identity;
let mallory: Identity;
let carol: Identity;
let sandboxUid: string;

function c(): TestCluster {
  return cluster;
}

/** A pod as the Sandbox controller makes it: labelled for the webhook's selector, owned by the Sandbox. */
function sandboxPod(owned = true): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: 'sbx-',
      namespace: NS,
      labels: { [CREATED_BY]: 'sandbox' },
      annotations: { [CREATED_BY]: 'sandbox' },
      ...(owned
        ? {
            ownerReferences: [
              {
                apiVersion: 'agents.kruise.io/v1alpha1',
                kind: 'Sandbox',
                name: 'sbx',
                uid: sandboxUid,
                controller: true,
              },
            ],
          }
        : {}),
    },
    spec: {
      automountServiceAccountToken: false,
      containers: [{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }],
    },
  };
}

async function createAs(
  who: Identity,
  pod: Json,
  extra: string[] = [],
): Promise<{ code: number; stderr: string; pod?: StoredPod }> {
  const result = await who.kubectl(['create', '-f', '-', '-o', 'json', ...extra], { input: JSON.stringify(pod) });
  return {
    code: result.code,
    stderr: result.stderr,
    pod: result.code === 0 ? (JSON.parse(result.stdout) as StoredPod) : undefined,
  };
}

const statusOf = (pod: StoredPod | undefined): unknown => JSON.parse(pod?.metadata.annotations?.[STATUS] ?? 'null');

/** The webhook's `admission` log line for a pod name; lines arrive a little after kube-apiserver has the answer. */
async function admissionLine(match: (line: Json) => boolean): Promise<Json> {
  const [line] = await webhook.logged(
    (l) => l.msg === 'admission' && l.namespace === NS && match(l),
    'a matching admission line',
  );
  return line ?? {};
}

/** POSTs a pod as a certificate identity and returns kube-apiserver's own status code and Status body. */
function postPodAs(who: Identity, pod: Json): Promise<{ status: number; body: Json }> {
  const cert = who.clientCert;
  if (cert === undefined) throw new Error(`${who.username} has no client certificate`);
  const body = JSON.stringify(pod);
  return new Promise((resolve, reject) => {
    const req = request(
      `${c().server}/api/v1/namespaces/${NS}/pods`,
      {
        method: 'POST',
        ca: c().caPem,
        cert: cert.certPem,
        key: cert.keyPem,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  cluster = await startCluster();
  await c().installSandboxCrd();
  await c().ensureNamespace(NS);
  await c().ensureNamespace(CONFIG_NS);
  await c().kubectlOk(['apply', '-f', CONFIGMAP]);
  await c().kubectlOk(['-n', CONFIG_NS, 'create', 'serviceaccount', CONTROLLER_SA]);
  // The same right for all three: whatever refuses one of them below is the webhook, not RBAC.
  await c().kubectlOk(['-n', NS, 'create', 'role', 'pod-creator', '--verb=create', '--resource=pods']);
  await c().kubectlOk([
    '-n',
    NS,
    'create',
    'rolebinding',
    'pod-creators',
    '--role=pod-creator',
    `--serviceaccount=${CONFIG_NS}:${CONTROLLER_SA}`,
    '--user=mallory',
    `--group=${TRUSTED_GROUP}`,
  ]);
  controller = await serviceAccountIdentity(cluster, CONFIG_NS, CONTROLLER_SA);
  mallory = certificateIdentity(cluster, 'mallory');
  carol = certificateIdentity(cluster, 'carol', [TRUSTED_GROUP]);

  webhook = await startWebhookProcess(cluster, {
    extraArgs: ['--trusted-creators', `${CONTROLLER}, group:${TRUSTED_GROUP}`],
  });
  await c().kubectlOk(['apply', '-f', '-'], {
    input: JSON.stringify(webhookConfiguration(WEBHOOK, webhook.url, webhook.ca.certPem)),
  });
  const sandbox = {
    apiVersion: 'agents.kruise.io/v1alpha1',
    kind: 'Sandbox',
    metadata: { name: 'sbx', namespace: NS },
    spec: { runtimes: [{ name: 'agent-runtime' }, { name: 'csi' }], template: {} },
  };
  sandboxUid = (
    JSON.parse(await c().kubectlOk(['create', '-f', '-', '-o', 'json'], { input: JSON.stringify(sandbox) })) as {
      metadata: { uid: string };
    }
  ).metadata.uid;
  // kube-apiserver picks up a new webhook configuration asynchronously: wait until the controller's dry run is
  // injected, so that an admitted pod below can only mean the webhook admitted it.
  await untilWebhookCalled('the webhook', async () => {
    const dry = await createAs(controller, sandboxPod(), ['--dry-run=server']);
    return statusOf(dry.pod) !== null || dry.stderr;
  });
});

afterAll(async () => {
  await webhook?.stop();
  await cluster?.stop();
});

describe('trusted pod creators on a real kube-apiserver', () => {
  it('authenticates the identities as the names the webhook is given, each allowed by RBAC to create pods', async () => {
    for (const [who, name] of [
      [controller, CONTROLLER],
      [mallory, 'mallory'],
      [carol, 'carol'],
    ] as const) {
      const review = JSON.parse(await who.kubectl(['auth', 'whoami', '-o', 'json']).then((r) => r.stdout)) as {
        status: { userInfo: Json };
      };
      expect(review.status.userInfo.username).toBe(name);
      expect((await who.kubectl(['auth', 'can-i', 'create', 'pods', '-n', NS])).stdout.trim()).toBe('yes');
    }
  });

  it("injects the runtimes into the Sandbox controller's pod", async () => {
    const { code, stderr, pod } = await createAs(controller, sandboxPod());
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(statusOf(pod)).toMatchObject({ injected: ['agent-runtime', 'csi'] });
    expect((pod?.spec.initContainers ?? []).map((x) => x.name)).toEqual(['agent-runtime', 'csi-sidecar']);
  });

  it('refuses the same pod from another user, naming them, and stores nothing', async () => {
    const before = await c().kubectlOk(['-n', NS, 'get', 'pods', '-o', 'name']);
    const { code, stderr } = await createAs(mallory, sandboxPod());
    expect(code).not.toBe(0);
    expect(stderr).toContain(
      `admission webhook "${WEBHOOK}.agents.kruise.io" denied the request: user "mallory" may not create a pod owned by ` +
        `Sandbox ${NS}/sbx: only the webhook's trusted creators may (--trusted-creators)`,
    );
    expect(await c().kubectlOk(['-n', NS, 'get', 'pods', '-o', 'name'])).toBe(before);
    expect(
      await admissionLine((l) => l.decision === 'denied' && String(l.message).startsWith('user "mallory"')),
    ).toMatchObject({
      pod: 'sbx-',
    });
  });

  it('answers that refusal with HTTP 403 from kube-apiserver', async () => {
    const { status, body } = await postPodAs(mallory, sandboxPod());
    expect(status).toBe(403);
    expect(body).toMatchObject({ kind: 'Status', status: 'Failure', code: 403 });
    expect(body.message).toMatch(
      /denied the request: user "mallory" may not create a pod owned by Sandbox e2e-trusted\/sbx/,
    );
  });

  it('trusts a member of a listed group, whatever its user name', async () => {
    const { code, stderr, pod } = await createAs(carol, sandboxPod());
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(statusOf(pod)).toMatchObject({ injected: ['agent-runtime', 'csi'] });
  });

  it("admits the other user's pod that claims no Sandbox, with nothing injected", async () => {
    const { code, stderr, pod } = await createAs(mallory, sandboxPod(false));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(statusOf(pod)).toBeNull();
    expect(pod?.spec.initContainers).toBeUndefined();
    // Every Sandbox-owned pod above was injected or denied, so an unchanged one is this pod: the webhook saw it.
    expect(await admissionLine((l) => l.decision === 'unchanged')).toMatchObject({ pod: 'sbx-', runtimes: [] });
  });

  it('says at startup whom it trusts', async () => {
    const [line] = await webhook.logged(
      (l) => l.msg === 'only trusted creators may create pods owned by a Sandbox',
      'the trust line',
    );
    expect(line).toMatchObject({
      users: [CONTROLLER],
      groups: [TRUSTED_GROUP],
    });
  });
});
