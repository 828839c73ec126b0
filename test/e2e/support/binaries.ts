// Where the e2e suite's tools are: etcd, kube-apiserver and kubectl (the "kube"
// set), helm, promtool, and the node's kubelet, kube-scheduler, pause, containerd, ctr and runc shim, each built from its pinned Go module by
// test/e2e/cluster/build.sh (see test/e2e/README.md).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type ToolSet = 'kube' | 'helm' | 'promtool' | 'node' | 'containerd';

const BINARIES: Record<ToolSet, readonly string[]> = {
  kube: ['etcd', 'kube-apiserver', 'kubectl'],
  helm: ['helm'],
  promtool: ['promtool'],
  node: ['kubelet', 'kube-scheduler', 'pause'],
  containerd: ['containerd', 'ctr', 'containerd-shim-runc-v2'],
};

/** Set by `npm run test:e2e` (test/e2e/cluster/with-tools.sh) to the bin dir build.sh printed. */
export function binDirEnv(set: ToolSet): string {
  return `SANDBOX_INJECTOR_${set.toUpperCase()}_BIN_DIR`;
}
export const BIN_DIR_ENV = binDirEnv('kube');

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const buildScript = path.join(repoRoot, 'test', 'e2e', 'cluster', 'build.sh');

const resolved = new Map<ToolSet, string>();

/**
 * The folder holding a tool set's binaries: $SANDBOX_INJECTOR_<SET>_BIN_DIR when
 * set, otherwise whatever build.sh prints (it only builds when its cache folder
 * is missing, so this is quick after the first time).
 */
export function resolveToolDir(set: ToolSet): string {
  const known = resolved.get(set);
  if (known !== undefined) return known;
  let dir = process.env[binDirEnv(set)];
  if (dir === undefined || dir === '') {
    const out = execFileSync('bash', [buildScript, set], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 1024 * 1024,
    });
    dir = out.trim().split('\n').pop() ?? '';
  }
  for (const bin of BINARIES[set]) {
    if (!existsSync(path.join(dir, bin))) {
      throw new Error(`e2e tool ${bin} not found in '${dir}' (run bash ${buildScript} ${set})`);
    }
  }
  resolved.set(set, dir);
  return dir;
}

/** The folder holding etcd, kube-apiserver and kubectl. */
export function resolveBinDir(): string {
  return resolveToolDir('kube');
}

/** The path of one tool set's binary, e.g. toolPath('helm', 'helm'). */
export function toolPath(set: ToolSet, binary: string): string {
  return path.join(resolveToolDir(set), binary);
}
