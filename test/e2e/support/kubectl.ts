import { spawn } from 'node:child_process';
import path from 'node:path';

export interface KubectlOptions {
  /** Written to kubectl's stdin (e.g. a manifest for `apply -f -`). */
  input?: string;
  /** Kill kubectl after this long and reject; default 60 s. */
  timeoutMs?: number;
  cwd?: string;
  env?: Record<string, string>;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `<binDir>/kubectl` with `kubeconfigPath`; resolves on any exit code, rejects on a timeout. */
export function runKubectl(
  binDir: string,
  kubeconfigPath: string,
  home: string,
  args: string[],
  opts: KubectlOptions = {},
): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(binDir, 'kubectl'), args, {
      cwd: opts.cwd ?? home,
      // HOME keeps kubectl's discovery cache inside the cluster dir.
      env: { ...process.env, KUBECONFIG: kubeconfigPath, HOME: home, ...(opts.env ?? {}) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kubectl ${args.join(' ')} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code: code ?? (signal ? 128 : 1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}
