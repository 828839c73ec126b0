/**
 * deliver-env at scale, for the delivery benchmark: DELIVER_BENCH_POPULATION (5,000) unclaimed Sandboxes and
 * as many pods of theirs, created in kube-apiserver before the controller starts, so its caches hold them all
 * while the 200 claims are measured among them. They are sized like real ones: each pod has a spec of about
 * 10 KiB (main container, agent-runtime and csi sidecars, env, mounts, probes) and a status as a kubelet
 * writes it, each Sandbox the same template, a few KiB of annotations and a status with its podInfo; the
 * managedFields are what kube-apiserver records for the create and the status update.
 *
 * The controller runs with the NODE_OPTIONS of its Deployment (manifests/components/deliver-env), and its RSS
 * is read from /proc once /readyz says both caches have listed, and again after the claims, against the
 * Deployment's memory limit.
 */
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments } from 'yaml';
import type { TestCluster } from '../../test/e2e/support/cluster.js';
import { memoryMiB } from '../../harness/proc.js';
import { repoPath } from '../../harness/repo.js';
import { freePort } from '../../harness/serve.js';

const COUNT = Number(process.env.DELIVER_BENCH_POPULATION ?? 5000);
const NS = 'bench-population';
/** Requests in flight while populating: enough to keep kube-apiserver busy, not so many that etcd times out. */
const PARALLEL = 8;

interface Memory {
  rssMiB: number;
  peakMiB: number;
}

export interface Population {
  /** The controller's metrics port: /readyz is read there. */
  metricsPort: number;
  /** The controller's environment: this one's, with the Deployment's NODE_OPTIONS. */
  env: NodeJS.ProcessEnv;
  /** Samples the controller's memory as soon as its /readyz answers 200. */
  watch(pid: number | undefined): void;
  /** Prints the figures: at ready, and now (after the claims). */
  report(): Promise<void>;
}

export async function population(cluster: TestCluster): Promise<Population> {
  const deployment = await deploymentMemory();
  const metricsPort = await freePort();
  const createdMs = COUNT > 0 ? await populate(cluster) : 0;
  let pid: number | undefined;
  let atReady: Promise<Memory & { readyMs: number }> | undefined;
  const env = { ...process.env };
  if (deployment.nodeOptions === undefined) delete env.NODE_OPTIONS;
  else env.NODE_OPTIONS = deployment.nodeOptions;
  return {
    metricsPort,
    env,
    watch(controllerPid) {
      pid = controllerPid;
      const started = Date.now();
      atReady = untilReady(metricsPort).then(async () => ({ ...(await memory(pid)), readyMs: Date.now() - started }));
      atReady.catch(() => undefined);
    },
    async report() {
      if (atReady === undefined) return;
      const ready = await atReady;
      const now = await memory(pid);
      const result = {
        population: COUNT,
        populateMs: createdMs,
        nodeOptions: deployment.nodeOptions ?? '',
        limitMiB: deployment.limitMiB,
        readyMs: ready.readyMs,
        rssAtReadyMiB: ready.rssMiB,
        peakAtReadyMiB: ready.peakMiB,
        rssAfterClaimsMiB: now.rssMiB,
        peakAfterClaimsMiB: now.peakMiB,
        underLimit: Math.max(ready.peakMiB, now.peakMiB) < deployment.limitMiB,
      };
      process.stdout.write(
        `deliver-env memory with ${COUNT} more Sandboxes and ${COUNT} pods in its caches ` +
          `(NODE_OPTIONS ${JSON.stringify(result.nodeOptions)}, limit ${deployment.limitMiB} MiB):\n` +
          `  ready after ${result.readyMs} ms: RSS ${ready.rssMiB} MiB, peak ${ready.peakMiB} MiB; ` +
          `after the claims: RSS ${now.rssMiB} MiB, peak ${now.peakMiB} MiB; ` +
          `${result.underLimit ? 'under' : 'NOT under'} the limit\n${JSON.stringify(result)}\n`,
      );
    },
  };
}

/** The NODE_OPTIONS and the memory limit of the deliver-env container, as the manifests install it. */
async function deploymentMemory(): Promise<{ nodeOptions: string | undefined; limitMiB: number }> {
  const file = repoPath('manifests/components/deliver-env/deployment.yaml');
  const docs = parseAllDocuments(await readFile(file, 'utf8')).map((doc) => doc.toJS() as Record<string, unknown>);
  type Container = {
    name?: string;
    env?: { name?: string; value?: string }[];
    resources?: { limits?: { memory?: string } };
  };
  const containers = docs.flatMap(
    (doc) =>
      (doc as { spec?: { template?: { spec?: { containers?: Container[] } } } }).spec?.template?.spec?.containers ?? [],
  );
  const container = containers.find((c) => c.name === 'deliver-env');
  const limit = /^(\d+)Mi$/.exec(container?.resources?.limits?.memory ?? '')?.[1];
  if (container === undefined || limit === undefined)
    throw new Error(`no deliver-env container with a Mi memory limit in ${file}`);
  return { nodeOptions: container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value, limitMiB: Number(limit) };
}

async function memory(pid: number | undefined): Promise<Memory> {
  if (pid === undefined) throw new Error('deliver-env has no pid');
  const { rss, peak } = await memoryMiB(pid);
  return { rssMiB: Math.round(rss), peakMiB: Math.round(peak) };
}

async function untilReady(port: number): Promise<void> {
  const deadline = Date.now() + 600_000;
  while (Date.now() < deadline) {
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (res) => res.status,
      () => 0,
    );
    if (status === 200) return;
    await sleep(100);
  }
  throw new Error('deliver-env was not ready within 600 s');
}

/** Creates the population; returns how long it took. */
async function populate(cluster: TestCluster): Promise<number> {
  const started = Date.now();
  await cluster.ensureNamespace(NS);
  const agent = new Agent({
    keepAlive: true,
    maxSockets: PARALLEL,
    ca: cluster.caPem,
    cert: cluster.admin.certPem,
    key: cluster.admin.keyPem,
  });
  const call = (method: string, url: string, body: unknown, type = 'application/json') =>
    send(agent, method, `${cluster.server}${url}`, body, type);
  const sandboxes = `/apis/agents.kruise.io/v1alpha1/namespaces/${NS}/sandboxes`;
  const pods = `/api/v1/namespaces/${NS}/pods`;
  const merge = 'application/merge-patch+json';
  try {
    await inParallel(COUNT, async (i) => {
      const made = (await call('POST', sandboxes, sandboxObject(i))) as { metadata: { uid: string } };
      const pod = (await call('POST', pods, podObject(i, made.metadata.uid))) as { metadata: { uid: string } };
      await call('PATCH', `${pods}/sbx-${i}-pod/status`, { status: podStatus(i) }, merge);
      await call('PATCH', `${sandboxes}/sbx-${i}/status`, { status: sandboxStatus(i, pod.metadata.uid) }, merge);
    });
  } finally {
    agent.destroy();
  }
  return Date.now() - started;
}

/** Runs `task` for 0..count-1, PARALLEL at a time. */
export async function inParallel(count: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}

/** One API call over `agent`; its answer's JSON, or an error naming the call and the status. */
export function send(agent: Agent, method: string, url: string, body: unknown, type: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers: { 'content-type': type } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if ((res.statusCode ?? 0) >= 300)
          reject(new Error(`${method} ${url}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
        else resolve(JSON.parse(text) as unknown);
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/**
 * Loopback addresses where nothing listens: deliver-env's new term looks into every pool pod (to clear what an
 * earlier claim left), and the bench sends nothing off this machine. Each look is refused at once.
 */
const ip = (i: number): string => `127.${64 + Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${1 + (i % 250)}`;

/** About 10 KiB as JSON: what a Sandbox template with the injected runtimes comes to. */
function podSpec(i: number): Record<string, unknown> {
  const env = Array.from({ length: 60 }, (_, k) => ({
    name: `APP_SETTING_${k}`,
    value: `value-${k}-of-sandbox-${i}-${'v'.repeat(40)}`,
  }));
  const mounts = [
    { name: 'sandbox-env', mountPath: '/var/sandbox' },
    { name: 'workspace', mountPath: '/workspace' },
    { name: 'envd-volume', mountPath: '/mnt/envd' },
  ];
  const probe = { httpGet: { path: '/health', port: 49983 }, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 };
  const resources = { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '2', memory: '4Gi' } };
  return {
    initContainers: [
      {
        name: 'agent-runtime',
        image: 'registry.example.com/agent-runtime:v0.3.0',
        restartPolicy: 'Always',
        env: [{ name: 'ENVD_DIR', value: '/mnt/envd' }],
        volumeMounts: mounts,
        resources,
      },
      {
        name: 'csi',
        image: 'registry.example.com/csi-sidecar:v1.2.0',
        restartPolicy: 'Always',
        volumeMounts: mounts.slice(1),
        resources,
      },
    ],
    containers: [
      {
        name: 'main',
        image: 'registry.example.com/agents/python-agent:2026.1',
        command: ['/bin/bash', '/var/sandbox/run_with_envs.sh', '--', 'python', '-m', 'agent.server', '--port', '8080'],
        env,
        ports: [
          { containerPort: 8080, name: 'http' },
          { containerPort: 49983, name: 'envd' },
        ],
        volumeMounts: mounts,
        readinessProbe: probe,
        livenessProbe: probe,
        resources,
      },
    ],
    volumes: [
      { name: 'sandbox-env', emptyDir: {} },
      { name: 'workspace', emptyDir: { sizeLimit: '10Gi' } },
      { name: 'envd-volume', emptyDir: {} },
    ],
    tolerations: [{ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }],
    terminationGracePeriodSeconds: 30,
  };
}

function sandboxObject(i: number): Record<string, unknown> {
  return {
    apiVersion: 'agents.kruise.io/v1alpha1',
    kind: 'Sandbox',
    metadata: {
      name: `sbx-${i}`,
      labels: { 'agents.kruise.io/sandbox-pool': 'python-agent', 'agents.kruise.io/sandbox-claimed': 'false' },
      annotations: {
        'agents.kruise.io/runtimes': 'agent-runtime,csi',
        'agents.kruise.io/env-vars-injection-policy': 'Auto',
        'example.com/tenant-metadata': JSON.stringify({ owner: `team-${i % 40}`, notes: 'n'.repeat(3000) }),
      },
    },
    spec: {
      runtimes: [{ name: 'agent-runtime' }, { name: 'csi' }],
      template: { metadata: { labels: { app: 'python-agent' } }, spec: podSpec(i) },
    },
  };
}

function sandboxStatus(i: number, podUID: string): Record<string, unknown> {
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    phase: 'Running',
    podInfo: { podIP: ip(i), podUID, nodeName: `node-${i % 50}` },
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: at, reason: 'PodReady', message: '' }],
  };
}

function podObject(i: number, sandboxUid: string): Record<string, unknown> {
  const status = { injected: ['agent-runtime', 'csi'], present: [], skipped: [], wrapped: ['main'] };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `sbx-${i}-pod`,
      labels: {
        'agents.kruise.io/created-by': 'sandbox',
        'agents.kruise.io/sandbox-pool': 'python-agent',
        app: 'python-agent',
      },
      annotations: { 'agents.kruise.io/runtime-injection-status': JSON.stringify(status) },
      ownerReferences: [
        {
          apiVersion: 'agents.kruise.io/v1alpha1',
          kind: 'Sandbox',
          name: `sbx-${i}`,
          uid: sandboxUid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { ...podSpec(i), nodeName: `node-${i % 50}` },
  };
}

function podStatus(i: number): Record<string, unknown> {
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const running = (name: string, image: string) => ({
    name,
    image,
    imageID: `${image}@sha256:${'0'.repeat(64)}`,
    containerID: `containerd://${'c'.repeat(64)}`,
    ready: true,
    started: true,
    restartCount: 0,
    state: { running: { startedAt: at } },
  });
  return {
    phase: 'Running',
    podIP: ip(i),
    podIPs: [{ ip: ip(i) }],
    hostIP: '192.168.0.10',
    startTime: at,
    conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(
      (type) => ({
        type,
        status: 'True',
        lastTransitionTime: at,
      }),
    ),
    initContainerStatuses: [
      running('agent-runtime', 'registry.example.com/agent-runtime:v0.3.0'),
      running('csi', 'registry.example.com/csi-sidecar:v1.2.0'),
    ],
    containerStatuses: [running('main', 'registry.example.com/agents/python-agent:2026.1')],
  };
}
