// One real node beside the e2e cluster: containerd (with Debian's runc) and a kubelet, plus kube-scheduler, all
// built by build.sh, running hostNetwork pods from images built here. What it is and is not: test/e2e/README.md,
// "The node". Two steps, because kube-apiserver must know the kubelet's CA and its own client certificate
// before it starts: prepareNode() (a folder, certificates, the machine's state), then startNode().
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitUntil } from '../../support/wait-until.js';
import { resolveToolDir } from './binaries.js';
import type { TestCluster } from './cluster.js';
import { startContainerd, type Containerd } from './containerd.js';
import { apiserverKubeletFlags, NODE_NAME, publishNodeAddress, startKubelet, writeKubeletPki } from './kubelet.js';
import type { KubeletPki } from './kubelet.js';
import { leftovers, readKernelSettings, restoreHost, snapshotHost, writeKernelSettings } from './node-host.js';
import type { HostSnapshot, Leftovers } from './node-host.js';
import { loadNodeImages } from './node-images.js';
import { describeExit, logTail, startProcess, stopProcess, type ManagedProcess } from './processes.js';

export interface PreparedNode {
  dir: string;
  pki: KubeletPki;
  host: HostSnapshot;
  /** Flags to start kube-apiserver with. */
  apiserverArgs: string[];
}

export function prepareNode(): PreparedNode {
  // Checked first, so that a missing tool set fails before anything changes on the machine.
  resolveToolDir('node');
  resolveToolDir('containerd');
  const host = snapshotHost();
  const dir = mkdtempSync(path.join(tmpdir(), 'si-e2e-node-'));
  const pki = writeKubeletPki(path.join(dir, 'pki'));
  return { dir, pki, host, apiserverArgs: apiserverKubeletFlags(pki) };
}

export interface E2eNode {
  dir: string;
  containerd: Containerd;
  kubelet: ManagedProcess;
  /** How many times the kubelet's kernel settings were found and put back. */
  kernelRestores(): number;
  /** Stops everything, the pods first, and puts the machine back; returns what is left (nothing, when clean). */
  stop(): Promise<Leftovers>;
}

async function until(what: string, deadline: number, procs: ManagedProcess[], probe: () => Promise<boolean>) {
  await waitUntil(probe, {
    what,
    timeoutMs: Math.max(0, deadline - Date.now()),
    intervalMs: 200,
    giveUp: () => {
      const exited = procs.find((p) => p.exit !== undefined);
      return exited?.exit === undefined
        ? undefined
        : new Error(`${exited.name} ${describeExit(exited.exit)} while waiting for ${what}:\n${logTail(exited)}`);
    },
    detail: () => procs.map((p) => `${p.name}:\n${logTail(p, 20)}`).join('\n'),
  });
}

async function nodeReady(cluster: TestCluster): Promise<boolean> {
  const r = await cluster.kubectl([
    'get',
    'node',
    NODE_NAME,
    '-o',
    'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
  ]);
  return r.code === 0 && r.stdout.trim() === 'True';
}

export async function startNode(prepared: PreparedNode, cluster: TestCluster, timeoutMs = 600_000): Promise<E2eNode> {
  const { dir, pki, host } = prepared;
  const deadline = Date.now() + timeoutMs;
  const nodeBin = resolveToolDir('node');
  const procs: ManagedProcess[] = [];
  let restores = 0;
  // The kubelet writes its kernel settings once at start; they go back as soon as they are seen.
  const guard = setInterval(() => {
    const now = readKernelSettings();
    if (Object.entries(host.kernel).some(([key, value]) => now[key] !== value)) {
      writeKernelSettings(host.kernel);
      restores++;
    }
  }, 50);
  guard.unref();
  let containerd: Containerd | undefined;
  const stop = async (): Promise<Leftovers> => {
    clearInterval(guard);
    // Pods first, through the API, while the kubelet still runs them down.
    await cluster.kubectl([
      'delete',
      'pods',
      '--all',
      '--all-namespaces',
      '--grace-period=0',
      '--force',
      '--wait=false',
    ]);
    if (containerd !== undefined && procs.some((p) => p.name === 'kubelet' && p.exit === undefined)) {
      const ctr = containerd.ctr;
      // Past the minute, what is left is taken down by hand below.
      await waitUntil(async () => (await ctr(['containers', 'ls', '-q']).catch(() => '')).trim(), {
        what: "the kubelet to take the pods' containers down",
        timeoutMs: 60_000,
        intervalMs: 200,
        until: (left) => left === '',
      }).catch(() => undefined);
    }
    for (const p of procs.filter((p) => p.name !== 'containerd').reverse()) await stopProcess(p, 10_000);
    if (containerd !== undefined && containerd.process.exit === undefined) {
      // Whatever the kubelet did not take down: its tasks killed, then its containers removed.
      const ctr = containerd.ctr;
      for (const id of (await ctr(['tasks', 'ls', '-q']).catch(() => '')).split('\n').filter(Boolean)) {
        await ctr(['tasks', 'kill', '--signal', 'SIGKILL', id]).catch(() => undefined);
        await ctr(['tasks', 'rm', '--force', id]).catch(() => undefined);
      }
      for (const id of (await ctr(['containers', 'ls', '-q']).catch(() => '')).split('\n').filter(Boolean)) {
        await ctr(['containers', 'rm', id]).catch(() => undefined);
      }
      await stopProcess(containerd.process, 10_000);
    }
    restoreHost(host, dir);
    const left = leftovers(host, dir);
    rmSync(dir, { recursive: true, force: true });
    return left;
  };
  try {
    containerd = await startContainerd(resolveToolDir('containerd'), path.join(dir, 'containerd'), deadline);
    procs.push(containerd.process);
    await loadNodeImages(containerd, path.join(nodeBin, 'pause'));
    const kubelet = await startKubelet(nodeBin, dir, cluster, pki, containerd.socket);
    procs.push(kubelet);
    await until(
      'node registered',
      deadline,
      procs,
      async () => (await cluster.kubectl(['get', 'node', NODE_NAME])).code === 0,
    );
    await publishNodeAddress(cluster);
    await until('node Ready', deadline, procs, () => nodeReady(cluster));
    // No controller-manager takes the not-ready taint away once the node is Ready.
    await cluster.kubectlOk(['patch', 'node', NODE_NAME, '--type=merge', '-p', '{"spec":{"taints":null}}']);
    const scheduler = startProcess(
      'kube-scheduler',
      path.join(nodeBin, 'kube-scheduler'),
      [`--kubeconfig=${cluster.kubeconfigPath}`, '--leader-elect=false', '--secure-port=0', '-v=1'],
      dir,
    );
    procs.push(scheduler);
    return { dir, containerd, kubelet, kernelRestores: () => restores, stop };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}
