/**
 * The delivery bench's Sandboxes: each has an envd double (test/support/envd-double.ts: it follows envd's
 * published file API; it is not the real envd) with the real run_with_envs.sh waiting in its folder, a Sandbox
 * whose runtime URL names the double, and a wrapped pod, running and named in the Sandbox's status.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import path from 'node:path';
import { wrappedSandboxPod } from '../../test/support/wrapped-sandbox-pod.js';
import type { TestCluster } from '../../test/e2e/support/cluster.js';
import { repoPath } from '../../harness/repo.js';
import type { cpuGroup } from '../cpu-group.js';
import { inParallel, send } from './population.js';

export const NS = 'bench-deliver';
const WRAPPER = repoPath('src/wrapper/run_with_envs.sh');

export interface WaitingApp {
  child: ReturnType<typeof spawn>;
  /** Wall-clock ms at which the wrapped command started, as it printed it. */
  started: Promise<number>;
}

/** The real wrapper on a double's folder, its command printing its own start time; counted in `group`. */
export function startApp(dir: string, group: ReturnType<typeof cpuGroup>): WaitingApp {
  const child = spawn('bash', [WRAPPER, '--', 'date', '+%s%N'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SANDBOX_ENV_DIR: dir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // From its start: the burst's figure is the group's growth over the burst, so its wait before is left out.
  if (!('unavailable' in group) && child.pid !== undefined) group.add(child.pid);
  let out = '';
  const started = new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('close', () => {
      const ns = /^(\d+)\n$/.exec(out)?.[1];
      if (ns === undefined) reject(new Error(`the app in ${dir} printed ${JSON.stringify(out)}`));
      else resolve(Number(BigInt(ns) / 1_000_000n) + Number(BigInt(ns) % 1_000_000n) / 1e6);
    });
  });
  started.catch(() => undefined);
  return { child, started };
}

/** The Sandboxes `names`, the i-th naming `urls[i]` as its runtime URL, and their pods, running and named. */
export async function createSandboxes(
  cluster: TestCluster,
  names: readonly string[],
  urls: readonly string[],
): Promise<void> {
  const listFile = path.join(cluster.dir, 'bench-sandboxes.json');
  writeFileSync(
    listFile,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: names.map((name, i) => ({
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'Sandbox',
        metadata: { name, namespace: NS, annotations: { 'agents.kruise.io/runtime-url': urls[i] ?? '' } },
        spec: {
          runtimes: [{ name: 'agent-runtime' }],
          template: { spec: { containers: [{ name: 'main', image: 'app:1' }] } },
        },
      })),
    }),
  );
  await cluster.kubectlOk(['apply', '-f', listFile]);
  const uids = JSON.parse(await cluster.kubectlOk(['-n', NS, 'get', 'sandboxes', '-o', 'json'])) as {
    items: { metadata: { name: string; uid: string } }[];
  };
  const uidOf = new Map(uids.items.map((s) => [s.metadata.name, s.metadata.uid]));
  writeFileSync(
    listFile,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: names.map((name) => wrappedSandboxPod({ sandbox: name, sandboxUid: uidOf.get(name), namespace: NS })),
    }),
  );
  await cluster.kubectlOk(['apply', '-f', listFile]);
  await runAndName(cluster, names);
}

/**
 * As a kubelet and upstream's controller would: each pod runs, and its Sandbox's status.podInfo.podUID names it.
 * deliver-env sends only to the pod a Sandbox names, once it runs with an IP of its own (here 127.0.0.1: the
 * runtime URL, which the bench trusts, says where each envd double is).
 */
async function runAndName(cluster: TestCluster, names: readonly string[]): Promise<void> {
  const agent = new Agent({
    keepAlive: true,
    ca: cluster.caPem,
    cert: cluster.admin.certPem,
    key: cluster.admin.keyPem,
  });
  const merge = 'application/merge-patch+json';
  const base = `${cluster.server}/api/v1/namespaces/${NS}/pods`;
  const sandboxes = `${cluster.server}/apis/agents.kruise.io/v1alpha1/namespaces/${NS}/sandboxes`;
  try {
    await inParallel(names.length, async (i) => {
      const name = names[i] ?? '';
      const status = { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] };
      const pod = (await send(agent, 'PATCH', `${base}/${name}-pod/status`, { status }, merge)) as {
        metadata: { uid: string };
      };
      const podInfo = { podUID: pod.metadata.uid, podIP: '127.0.0.1' };
      await send(agent, 'PATCH', `${sandboxes}/${name}/status`, { status: { podInfo } }, merge);
    });
  } finally {
    agent.destroy();
  }
}
