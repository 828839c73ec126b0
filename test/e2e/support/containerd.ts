// containerd for the e2e node: built by build.sh (the containerd set), runc from Debian, everything it can be
// told about under the node's folder (root, state, sockets, runc's root, the opt plugin, CNI), NRI off, the
// pause image ours. Facts of this machine it must meet (test/e2e/README.md, "The node"):
// - runc cannot lower oom_score_adj without CAP_SYS_RESOURCE, which this VM's bounding set lacks, so
//   `restrict_oom_score_adj` keeps every container at or above containerd's own score;
// - hostNetwork pods never call CNI, but the CRI reports the network not ready, and so the node NotReady,
//   until a CNI config exists: one conflist of type loopback, whose plugin is never run.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { waitUntil } from '../../support/wait-until.js';
import { runCollecting, startProcess, type ManagedProcess } from './processes.js';
import { describeExit, logTail } from './processes.js';

export const PAUSE_IMAGE = 'localhost/pause:e2e';

export interface Containerd {
  process: ManagedProcess;
  /** unix socket path of the gRPC API (the kubelet's CRI endpoint). */
  socket: string;
  /** Runs ctr against this containerd in the k8s.io namespace; rejects unless it exits 0. */
  ctr: (args: string[]) => Promise<string>;
}

export function runcPath(): string {
  return execFileSync('bash', ['-c', 'command -v runc'], { encoding: 'utf8' }).trim();
}

function config(dir: string, socket: string): string {
  const q = (value: string): string => JSON.stringify(value);
  return [
    'version = 3',
    `root = ${q(path.join(dir, 'root'))}`,
    `state = ${q(path.join(dir, 'state'))}`,
    // Its own OOM score stays as it is; the containers inherit it (restrict_oom_score_adj below).
    'oom_score = 0',
    '[grpc]',
    `  address = ${q(socket)}`,
    '[ttrpc]',
    `  address = ${q(`${socket}.ttrpc`)}`,
    '[metrics]',
    '  address = ""',
    '[debug]',
    '  level = "info"',
    '[plugins."io.containerd.nri.v1.nri"]',
    '  disable = true',
    '[plugins."io.containerd.internal.v1.opt"]',
    `  path = ${q(path.join(dir, 'opt'))}`,
    '[plugins."io.containerd.grpc.v1.cri"]',
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    '[plugins."io.containerd.cri.v1.images"]',
    '  snapshotter = "overlayfs"',
    '[plugins."io.containerd.cri.v1.images".pinned_images]',
    `  sandbox = ${q(PAUSE_IMAGE)}`,
    '[plugins."io.containerd.cri.v1.runtime"]',
    '  restrict_oom_score_adj = true',
    '  enable_selinux = false',
    '[plugins."io.containerd.cri.v1.runtime".cni]',
    `  bin_dirs = [${q(path.join(dir, 'cni', 'bin'))}]`,
    `  conf_dir = ${q(path.join(dir, 'cni', 'conf'))}`,
    '[plugins."io.containerd.cri.v1.runtime".containerd]',
    '  default_runtime_name = "runc"',
    '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]',
    '  runtime_type = "io.containerd.runc.v2"',
    '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]',
    `  BinaryName = ${q(runcPath())}`,
    `  Root = ${q(path.join(dir, 'runc'))}`,
    '  SystemdCgroup = false',
    '',
  ].join('\n');
}

export async function startContainerd(binDir: string, dir: string, deadline: number): Promise<Containerd> {
  mkdirSync(path.join(dir, 'cni', 'conf'), { recursive: true });
  mkdirSync(path.join(dir, 'cni', 'bin'), { recursive: true });
  writeFileSync(
    path.join(dir, 'cni', 'conf', '10-loopback.conflist'),
    JSON.stringify({ cniVersion: '1.0.0', name: 'e2e-loopback', plugins: [{ type: 'loopback' }] }),
  );
  const socket = path.join(dir, 'containerd.sock');
  const configFile = path.join(dir, 'config.toml');
  writeFileSync(configFile, config(dir, socket));
  // The shim finds itself, and runc is named in the config, so PATH only needs the built binaries first.
  const env = { ...process.env, PATH: `${binDir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
  const proc = startProcess('containerd', path.join(binDir, 'containerd'), ['--config', configFile], dir, env);
  const ctr = async (args: string[]): Promise<string> => {
    const r = await runCollecting(path.join(binDir, 'ctr'), ['--address', socket, '--namespace', 'k8s.io', ...args], {
      cwd: dir,
      env,
    }).done;
    if (r.code !== 0) throw new Error(`ctr ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
    return r.stdout;
  };
  const serving = async (): Promise<boolean> =>
    existsSync(socket) &&
    (await ctr(['version']).then(
      () => true,
      () => false,
    ));
  await waitUntil(serving, {
    what: 'containerd to serve',
    timeoutMs: Math.max(0, deadline - Date.now()),
    intervalMs: 100,
    giveUp: () =>
      proc.exit === undefined ? undefined : new Error(`containerd ${describeExit(proc.exit)}:\n${logTail(proc)}`),
    detail: () => logTail(proc),
  });
  return { process: proc, socket, ctr };
}
