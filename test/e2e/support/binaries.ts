// Where the e2e cluster's binaries are: etcd, kube-apiserver and kubectl, built
// from their Go modules by test/e2e/cluster/build.sh (see docs/e2e.md).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Set by `npm run test:e2e` to the bin dir that build.sh printed. */
export const BIN_DIR_ENV = 'SANDBOX_INJECTOR_KUBE_BIN_DIR';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const buildScript = path.join(repoRoot, 'test', 'e2e', 'cluster', 'build.sh');
const BINARIES = ['etcd', 'kube-apiserver', 'kubectl'] as const;

let resolvedBinDir: string | undefined;

/**
 * The folder holding etcd, kube-apiserver and kubectl: $SANDBOX_INJECTOR_KUBE_BIN_DIR
 * when set, otherwise whatever build.sh prints (it only builds when its cache
 * folder is missing, so this is quick after the first time).
 */
export function resolveBinDir(): string {
  if (resolvedBinDir !== undefined) return resolvedBinDir;
  let dir = process.env[BIN_DIR_ENV];
  if (dir === undefined || dir === '') {
    const out = execFileSync('bash', [buildScript], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 1024 * 1024,
    });
    dir = out.trim().split('\n').pop() ?? '';
  }
  for (const bin of BINARIES) {
    if (!existsSync(path.join(dir, bin))) {
      throw new Error(`e2e cluster binary ${bin} not found in '${dir}' (run bash ${buildScript})`);
    }
  }
  resolvedBinDir = dir;
  return dir;
}
