/**
 * Test helpers that run the real src/wrapper/run_with_envs.sh under bash as a child process, so the
 * tests exercise the same file the container image ships.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdtemp, open, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitUntil } from '../support/wait-until.js';

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
  /** The script to run, when not the source's: the copy in the folder, as a pod runs it. */
  script?: string;
  /** Runs the wrapper as this uid and gid (no supplementary groups), as a container's non-root user. */
  user?: number;
  /** What the wrapper reads on stdin (as a container with `stdin: true`); none when undefined. */
  stdin?: string;
}

export function startWrapper(args: readonly string[], options: WrapperOptions): RunningWrapper {
  // A minimal environment keeps the host's variables from masking what env.sh did or did not set.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    SANDBOX_ENV_DIR: options.envDir,
    ...options.env,
  };
  const child = spawn('bash', [options.script ?? WRAPPER_PATH, ...args], {
    cwd: options.cwd ?? options.envDir,
    env,
    // libuv drops the supplementary groups when it changes the ids.
    ...(options.user === undefined ? {} : { uid: options.user, gid: options.user }),
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (options.stdin !== undefined) child.stdin?.end(options.stdin);
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function waitForFile(file: string, timeoutMs = 10_000): Promise<void> {
  await waitUntil(() => exists(file), { what: file, timeoutMs, intervalMs: 20 });
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

/** `promise`, or a rejection naming `what` once `ms` have passed: every wait in these tests has its own deadline. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Fields of /proc/PID/stat after COMM (which may hold spaces): [0] is the state, [1] the parent's PID. */
async function statFields(pid: number | string): Promise<string[] | undefined> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // the process ended between the listing and the read
  }
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The PIDs whose parent is `pid`, read from /proc at this instant. */
export async function childrenOf(pid: number): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = await statFields(entry);
    if (fields !== undefined && Number(fields[1]) === pid) found.push(Number(entry));
  }
  return found;
}

export type WaitKind = 'fifo' | 'ptmx';

/**
 * Resolves once the wrapper `pid` holds its wait descriptor open (the FIFO `envDir/.env_wake`, or /dev/ptmx
 * when it has no FIFO) and is asleep: by then its traps are set and it is inside its wait. Its own deadline.
 */
export async function waitUntilWaiting(pid: number, envDir: string, timeoutMs = 10_000): Promise<WaitKind> {
  const fifo = path.join(envDir, '.env_wake');
  const waiting = async (): Promise<WaitKind | undefined> => {
    let kind: WaitKind | undefined;
    for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      if (target === fifo) kind = 'fifo';
      else if (target === '/dev/ptmx' || target === '/dev/pts/ptmx') kind ??= 'ptmx';
    }
    return kind !== undefined && (await statFields(pid))?.[0] === 'S' ? kind : undefined;
  };
  return waitUntil(waiting, { what: `process ${pid} to start waiting`, timeoutMs });
}

/**
 * Resolves once process `pid` is blocked opening a FIFO for writing, with no reader yet: the kernel names that
 * sleep `wait_for_partner` (fs/pipe.c) in /proc/PID/wchan. Where wchan is hidden, a sleeping open or openat
 * (/proc/PID/syscall, x86-64 numbers 2 and 257) stands for it. Its own deadline.
 */
export async function waitUntilBlockedOpening(pid: number, timeoutMs = 10_000): Promise<void> {
  const blocked = async (): Promise<boolean> => {
    const wchan = await readFile(`/proc/${pid}/wchan`, 'utf8').catch(() => '');
    if (wchan === 'wait_for_partner') return true;
    if (wchan !== '' && wchan !== '0') return false;
    const syscall = (await readFile(`/proc/${pid}/syscall`, 'utf8').catch(() => '')).split(' ')[0];
    return (syscall === '2' || syscall === '257') && (await statFields(pid))?.[0] === 'S';
  };
  await waitUntil(blocked, { what: `process ${pid} to be blocked opening a FIFO`, timeoutMs });
}

export interface ProcessesStarted {
  /** Children seen alive at any sample. */
  seen: number[];
  /** Growth of the minor faults of the children it reaped (field cminflt): any child that ran adds to it. */
  reapedFaults: number;
}

/**
 * Watches `pid` for `windowMs` (the length of the observation, not a guess at how long something takes):
 * every child alive at a sample, and the faults of every child reaped in between, however short it lived.
 */
export async function processesStartedBy(pid: number, windowMs: number): Promise<ProcessesStarted> {
  const cminflt = async () => Number((await statFields(pid))?.[8] ?? Number.NaN);
  const before = await cminflt();
  const seen = new Set<number>();
  const end = Date.now() + windowMs;
  while (Date.now() < end) {
    for (const child of await childrenOf(pid)) seen.add(child);
    await sleep(5);
  }
  return { seen: [...seen], reapedFaults: (await cminflt()) - before };
}

/**
 * What a writer does after creating .env_ready (docs/env-file.md): one byte into the FIFO, opened without
 * blocking, so no reader means no wake rather than a hang. False when there was nothing to wake.
 */
export async function writeWake(envDir: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(path.join(envDir, '.env_wake'), constants.O_WRONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENXIO' || (error as NodeJS.ErrnoException).code === 'ENOENT')
      return false;
    throw error;
  }
  try {
    await handle.write('\n');
    return true;
  } finally {
    await handle.close();
  }
}

/** The uid (and gid) that tenant code runs as in E2B's images (`user`): the attacker of the env folder's tests. */
export const TENANT_UID = 1000;

/** What a process of the sandbox may try on a path in the env folder. */
export type AttackOp =
  /** open O_WRONLY|O_TRUNC|O_NONBLOCK and write: replace the content in place (a FIFO: write a wake) */
  | 'write'
  /** create a new file there (O_CREAT|O_EXCL) */
  | 'create'
  /** rename a file of its own, made in the system's temporary folder, onto the path */
  | 'replace'
  /** rename the path to another name in the folder */
  | 'rename'
  | 'unlink'
  /** chmod 0777 */
  | 'chmod'
  /** a symlink at the path, to /etc/passwd */
  | 'symlink';

export interface AttackStep {
  op: AttackOp;
  path: string;
}

// Each step synchronously, in order; its result is "ok" or the errno code it failed with.
const ATTACKER = `
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { O_WRONLY, O_TRUNC, O_NONBLOCK } = fs.constants;
const results = [];
for (const { op, path: target } of JSON.parse(process.argv[1])) {
  const own = path.join(os.tmpdir(), 'attacker-' + process.pid + '-' + results.length);
  try {
    if (op === 'write') {
      const fd = fs.openSync(target, O_WRONLY | O_TRUNC | O_NONBLOCK);
      try { fs.writeSync(fd, 'planted\\n'); } finally { fs.closeSync(fd); }
    } else if (op === 'create') fs.writeFileSync(target, 'planted\\n', { flag: 'wx' });
    else if (op === 'replace') { fs.writeFileSync(own, 'planted\\n'); fs.renameSync(own, target); }
    else if (op === 'rename') fs.renameSync(target, target + '.moved');
    else if (op === 'unlink') fs.unlinkSync(target);
    else if (op === 'chmod') fs.chmodSync(target, 0o777);
    else if (op === 'symlink') fs.symlinkSync('/etc/passwd', target);
    else throw Object.assign(new Error(op), { code: 'UNKNOWN_OP' });
    results.push('ok');
  } catch (error) {
    results.push(error.code ?? String(error));
  } finally {
    fs.rmSync(own, { force: true });
  }
}
process.stdout.write(JSON.stringify(results));
`;

/**
 * Runs `steps` as `uid` (gid the same, no supplementary groups) in a Node process of its own, and returns each
 * step's result: "ok", or the errno code it failed with (EACCES, EPERM, ...). Its own deadline.
 */
export async function attemptAs(uid: number, steps: readonly AttackStep[], timeoutMs = 10_000): Promise<string[]> {
  const child = spawn(process.execPath, ['-e', ATTACKER, JSON.stringify(steps)], {
    cwd: os.tmpdir(),
    uid,
    gid: uid,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await within(
    new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    }),
    timeoutMs,
    `the attempts as uid ${uid}`,
  ).finally(() => child.kill('SIGKILL'));
  if (code !== 0) throw new Error(`the attempts as uid ${uid} exited ${code}: ${stderr}`);
  const results: unknown = JSON.parse(stdout);
  if (!Array.isArray(results) || !results.every((r): r is string => typeof r === 'string')) {
    throw new Error(`the attempts as uid ${uid} printed ${stdout}`);
  }
  return results;
}
