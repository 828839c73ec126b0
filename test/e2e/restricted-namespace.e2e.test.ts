// A wrapped Sandbox pod in a namespace that enforces Pod Security "restricted", on a real kube-apiserver, whose
// built-in PodSecurity admission judges the pod after the webhook's patch: the wrapper init container the
// webhook adds (--wrapper-image, as the Deployment sets it) must pass it, or the whole Sandbox pod is refused.
// The injection config's own sidecar is written to pass as well, as a cluster enforcing restricted needs. The
// admission's warnings (--warn-unwrapped, as the Deployment sets it) reach the creator through kube-apiserver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limitWarnings } from '../../src/admission/warnings.js';
import { readinessProbeWarning } from '../../src/injection/auto-warnings.js';
import { startCluster, type TestCluster } from './support/cluster.js';
import { untilWebhookCalled } from './support/readiness.js';
import { createSandbox, sandboxPod } from './support/sandbox-pods.js';
import { startWebhookProcess, webhookConfiguration, type WebhookProcess } from './support/webhook-process.js';

const NS = 'e2e-restricted';
const CONFIG_NS = 'sandbox-system';
const WEBHOOK = 'sandbox-injector-restricted';
const STATUS = 'agents.kruise.io/runtime-injection-status';

type Json = Record<string, unknown>;
interface StoredPod {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { initContainers?: Json[]; containers: Json[] };
}

/** What restricted asks of each container; runAsNonRoot and seccomp are set for the whole pod below. */
const RESTRICTED_CONTAINER = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

const AGENT_RUNTIME = {
  mainContainer: {
    name: '',
    env: [{ name: 'ENVD_DIR', value: '/mnt/envd' }],
    volumeMounts: [{ name: 'envd-volume', mountPath: '/mnt/envd' }],
    lifecycle: { postStart: { exec: { command: ['bash', '/mnt/envd/envd-run.sh'] } } },
  },
  csiSidecar: [
    {
      name: 'agent-runtime',
      image: 'registry.example.com/agent-runtime:v0.3.0',
      restartPolicy: 'Always',
      securityContext: RESTRICTED_CONTAINER,
      volumeMounts: [{ name: 'envd-volume', mountPath: '/mnt/envd' }],
    },
  ],
  volume: [{ name: 'envd-volume', emptyDir: {} }],
};

let cluster: TestCluster;
let webhook: WebhookProcess;
let sandboxUid: string;

function pod(containerSecurity: Json = RESTRICTED_CONTAINER): Json {
  const base = sandboxPod(NS, 'sbx', sandboxUid, [
    {
      name: 'app',
      image: 'python:3.12',
      command: ['python', 'app.py'],
      securityContext: containerSecurity,
      readinessProbe: { httpGet: { path: '/ready', port: 8080 } },
    },
  ]);
  const spec = base.spec as Json;
  spec.securityContext = { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } };
  return base;
}

async function create(
  manifest: Json,
  extra: string[] = [],
): Promise<{ code: number; stderr: string; pod?: StoredPod }> {
  const result = await cluster.kubectl(['create', '-f', '-', '-o', 'json', ...extra], {
    input: JSON.stringify(manifest),
  });
  return {
    code: result.code,
    stderr: result.stderr,
    ...(result.code === 0 ? { pod: JSON.parse(result.stdout) as StoredPod } : {}),
  };
}

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.installSandboxCrd();
  await cluster.ensureNamespace(NS);
  await cluster.ensureNamespace(CONFIG_NS);
  await cluster.kubectlOk(['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=restricted', '--overwrite']);
  await cluster.applyObject({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'sandbox-injection-config', namespace: CONFIG_NS },
    data: { 'agent-runtime': JSON.stringify(AGENT_RUNTIME) },
  });
  webhook = await startWebhookProcess(cluster, {
    extraArgs: ['--wrapper-image', 'ghcr.io/example/sandbox-injector:0.1.0', '--warn-unwrapped'],
  });
  await cluster.kubectlOk(['apply', '-f', '-'], {
    input: JSON.stringify(webhookConfiguration(WEBHOOK, webhook.url, webhook.ca.certPem)),
  });
  sandboxUid = await createSandbox(cluster, NS, 'sbx', {
    runtimes: [{ name: 'agent-runtime' }],
    template: {},
  });
  await cluster.kubectlOk(['-n', NS, 'annotate', 'sandbox', 'sbx', 'agents.kruise.io/env-vars-injection-policy=Auto']);
  // kube-apiserver picks up a new webhook configuration asynchronously: wait until a dry run is injected.
  await untilWebhookCalled('the webhook', async () => {
    const dry = await create(pod(), ['--dry-run=server']);
    return dry.pod?.metadata.annotations?.[STATUS] !== undefined || dry.stderr;
  });
});

afterAll(async () => {
  await webhook?.stop();
  await cluster?.stop();
});

describe('a wrapped Sandbox pod in a namespace enforcing Pod Security restricted', () => {
  it('is refused when a container of its own breaks restricted (PodSecurity admission is on)', async () => {
    const refused = await create(pod({}));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/violates PodSecurity "restricted/);
    expect(refused.stderr).toContain('allowPrivilegeEscalation');
  });

  it('is admitted with the wrapper init container, which carries what restricted asks', async () => {
    const created = await create(pod());
    expect(created.code, created.stderr).toBe(0);
    const stored = created.pod as StoredPod;
    expect(JSON.parse(stored.metadata.annotations?.[STATUS] ?? '{}')).toMatchObject({
      injected: ['agent-runtime'],
      wrapped: ['app'],
    });
    const copier = (stored.spec.initContainers ?? []).find((c) => c.name === 'sandbox-env-wrapper');
    expect(copier).toMatchObject({
      image: 'ghcr.io/example/sandbox-injector:0.1.0',
      securityContext: {
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      },
      resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { cpu: '200m', memory: '96Mi' } },
    });
    expect(stored.spec.containers[0]?.command).toEqual(['/bin/bash', '/var/sandbox/run_with_envs.sh', '--']);
  });

  it("hands the creator the webhook's warning about the httpGet readiness probe", async () => {
    const created = await create(pod());
    expect(created.code).toBe(0);
    // Cut at 120 characters as the answer cuts it; the reason comes first, so it is what is kept.
    const [expected] = limitWarnings([`Sandbox ${NS}/sbx: ${readinessProbeWarning('app', 'httpGet')}`]);
    expect(expected).toContain('not Ready until claimed, pool never fills');
    expect(created.stderr).toContain(`Warning: ${expected ?? ''}`);
  });
});
