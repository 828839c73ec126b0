// The cluster's child processes (etcd, kube-apiserver): each writes stdout and
// stderr to `<dir>/<name>.log`, so a failed start can quote the log's tail.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  logPath: string;
  /** Set once the process has exited or failed to start. */
  exit: ExitInfo | undefined;
  exited: Promise<ExitInfo>;
}

export function startProcess(
  name: string,
  bin: string,
  args: string[],
  cwd: string,
  env?: NodeJS.ProcessEnv,
): ManagedProcess {
  const logPath = path.join(cwd, `${name}.log`);
  const fd = openSync(logPath, 'a');
  let child: ChildProcess;
  try {
    child = spawn(bin, args, { cwd, env, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  const proc: ManagedProcess = {
    name,
    child,
    logPath,
    exit: undefined,
    exited: new Promise<ExitInfo>((resolve) => {
      child.once('error', (error) => {
        proc.exit = { code: null, signal: null, error };
        resolve(proc.exit);
      });
      child.once('exit', (code, signal) => {
        proc.exit = { code, signal };
        resolve(proc.exit);
      });
    }),
  };
  return proc;
}

/** SIGTERM, then SIGKILL if the process has not exited after `graceMs`. */
export async function stopProcess(p: ManagedProcess, graceMs: number): Promise<void> {
  if (p.exit !== undefined || p.child.pid === undefined) return;
  p.child.kill('SIGTERM');
  const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
  if ((await Promise.race([p.exited, timer])) === 'timeout') {
    p.child.kill('SIGKILL');
    await p.exited;
  }
}

/** Sends SIGTERM to a child that is still running and waits for it to exit. */
export async function terminate(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
}

export function logTail(p: ManagedProcess, lines = 40): string {
  try {
    return readFileSync(p.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export function describeExit(e: ExitInfo): string {
  if (e.error) return `failed to start: ${e.error.message}`;
  return e.signal ? `killed by ${e.signal}` : `exited with code ${String(e.code)}`;
}

/** What a command-line tool printed, and how it exited (128 for a signal). */
export interface ToolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a tool to its end, collecting its output; `done` resolves on any exit code. */
export function runCollecting(
  bin: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): { process: ChildProcess; done: Promise<ToolResult> } {
  const child = spawn(bin, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => err.push(c));
  const done = new Promise<ToolResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({
        code: code ?? (signal === null ? 1 : 128),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });
  return { process: child, done };
}
