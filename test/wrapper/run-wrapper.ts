/**
 * Test helpers that run the real src/wrapper/run_with_envs.sh under bash as a child process, so the
 * tests exercise the same file the container image ships.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const WRAPPER_PATH = fileURLToPath(new URL('../../src/wrapper/run_with_envs.sh', import.meta.url));

export interface WrapperResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

export interface RunningWrapper {
  child: ChildProcess;
  done: Promise<WrapperResult>;
}

export interface WrapperOptions {
  envDir: string;
  cwd?: string;
  /** Extra variables for the wrapper's own environment (what the container spec would set). */
  env?: Record<string, string>;
}

export function startWrapper(args: readonly string[], options: WrapperOptions): RunningWrapper {
  // A minimal environment keeps the host's variables from masking what env.sh did or did not set.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    SANDBOX_ENV_DIR: options.envDir,
    ...options.env,
  };
  const child = spawn('bash', [WRAPPER_PATH, ...args], {
    cwd: options.cwd ?? options.envDir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
  const done = new Promise<WrapperResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      resolve({ code, signal, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8') });
    });
  });
  return { child, done };
}

export function runWrapper(args: readonly string[], options: WrapperOptions): Promise<WrapperResult> {
  return startWrapper(args, options).done;
}

export function makeTempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), `${prefix}-`));
}

export function removeDir(dir: string): Promise<void> {
  return rm(dir, { recursive: true, force: true });
}

/** Hand-written readiness, independent of the TypeScript writer, so wrapper tests stand alone. */
export async function signalReady(envDir: string, envSh?: string): Promise<void> {
  if (envSh !== undefined) {
    await writeFile(path.join(envDir, 'env.sh'), envSh, { mode: 0o600 });
  }
  await writeFile(path.join(envDir, '.env_ready'), '');
}

export async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function waitForFile(file: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await exists(file))) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${file}`);
    }
    await sleep(20);
  }
}

/** Parse `env -0` output into name → raw bytes of the value. */
export function parseEnv0(output: Buffer): Map<string, Buffer> {
  const vars = new Map<string, Buffer>();
  let start = 0;
  while (start < output.length) {
    let end = output.indexOf(0, start);
    if (end < 0) {
      end = output.length;
    }
    const entry = output.subarray(start, end);
    const eq = entry.indexOf('=');
    if (eq > 0) {
      vars.set(entry.subarray(0, eq).toString('utf8'), Buffer.from(entry.subarray(eq + 1)));
    }
    start = end + 1;
  }
  return vars;
}

/**
 * Resolves, with its PID, once process `pid` has a child named `name` other than those in `seen` (read from
 * /proc): for the wrapper, a `sleep` child means it is inside its wait loop, after its traps are set, and a new
 * one means another round of it. An event to wait for instead of a guessed time.
 */
export async function waitForChildNamed(
  pid: number,
  name: string,
  seen: ReadonlySet<number> = new Set(),
): Promise<number> {
  for (;;) {
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      } catch {
        continue; // the process ended between the listing and the read
      }
      // "PID (COMM) STATE PPID ...": COMM may hold spaces, so split after its closing parenthesis.
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      if (comm === name && ppid === pid && !seen.has(Number(entry))) return Number(entry);
    }
    await sleep(10);
  }
}
