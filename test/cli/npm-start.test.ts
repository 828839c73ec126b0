/**
 * `npm start` as a person or a supervisor runs it: SIGTERM to npm's own process reaches the server, which drains,
 * logs its shutdown and frees its ports; Ctrl-C (SIGINT to the whole process group) is one stop request, not two.
 *
 * npm runs the script through `sh -c`, and a shell that forks for the command would take the SIGTERM npm forwards
 * and leave node behind; the script `exec`s node so that npm's child is the server. The run uses a copy of the
 * package (its own dist/, node_modules linked), so `prestart`'s build never rewrites dist/ under the other tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { freePort } from '../../harness/serve.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The build in `prestart` runs on a machine shared with other test files: minutes, not seconds, at worst. */
const START_DEADLINE_MS = 240_000;
const STOP_DEADLINE_MS = 30_000;

let copy: string;
beforeAll(async () => {
  copy = await mkdtemp(join(tmpdir(), 'si-npm-start-'));
  for (const entry of [
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'tsconfig.build.json',
    'src',
    'manifests',
  ]) {
    await cp(join(ROOT, entry), join(copy, entry), { recursive: true });
  }
  await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
});

const started: ChildProcess[] = [];
afterAll(async () => {
  // A failed test must not leave a server behind: each npm runs in a process group of its own.
  for (const child of started) {
    try {
      process.kill(-groupOf(child), 'SIGKILL');
    } catch {
      // ESRCH: the group is gone, as it should be.
    }
  }
  await rm(copy, { recursive: true, force: true });
});

interface NpmStart {
  npm: ChildProcess;
  /** Resolves with the first JSON log line whose msg is `message`, or rejects at the deadline. */
  logged(message: string, deadlineMs: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  output(): string;
}

function npmStart(npmArgs: string[], serveArgs: string[]): NpmStart {
  // detached: a process group of its own, as a terminal gives a foreground job.
  const npm = spawn('npm', ['start', ...npmArgs, '--', ...serveArgs], {
    cwd: copy,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(npm);
  const lines: Record<string, unknown>[] = [];
  let output = '';
  const waiters: (() => void)[] = [];
  npm.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  if (npm.stdout !== null) {
    createInterface({ input: npm.stdout }).on('line', (text) => {
      output += `${text}\n`;
      // npm's own lines (`> sandbox-injector@0.1.0 start`, the build) are not JSON.
      if (text.startsWith('{')) lines.push(JSON.parse(text) as Record<string, unknown>);
      for (const wake of waiters.splice(0)) wake();
    });
  }
  const exited = new Promise<number | null>((resolve) => npm.on('close', (code) => resolve(code)));
  const logged = (message: string, deadlineMs: number): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no "${message}" line within ${deadlineMs} ms:\n${output}`)),
        deadlineMs,
      );
      const look = (): void => {
        const line = lines.find((candidate) => candidate.msg === message);
        if (line !== undefined) {
          clearTimeout(timer);
          resolve(line);
        } else waiters.push(look);
      };
      look();
      void exited.then(() => {
        if (!lines.some((candidate) => candidate.msg === message)) {
          clearTimeout(timer);
          reject(new Error(`npm exited before a "${message}" line:\n${output}`));
        }
      });
    });
  return { npm, logged, exited, output: () => output };
}

/** The process group npm leads (it was spawned detached); never 0, which would be the test's own group. */
function groupOf(npm: ChildProcess): number {
  if (npm.pid === undefined) throw new Error('npm did not start');
  return npm.pid;
}

/** Whether a listener may bind the port now: the server that had it has let it go. */
async function isFree(port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

async function startAndStop(npmArgs: string[], stop: (npm: ChildProcess) => void, signal: string): Promise<void> {
  const metricsPort = await freePort();
  const run = npmStart(npmArgs, [
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--metrics-port',
    String(metricsPort),
    '--self-signed-dir',
    'certs',
  ]);
  const listening = await run.logged('listening', START_DEADLINE_MS);
  const { port } = listening.address as { port: number };
  expect(await isFree(port)).toBe(false);

  stop(run.npm);
  expect(await run.logged('shutting down: draining in-flight admissions', STOP_DEADLINE_MS)).toMatchObject({ signal });
  expect(await run.logged('stopped', STOP_DEADLINE_MS)).toMatchObject({ forced: false });
  expect(await run.exited).toBe(0);
  expect(await isFree(port)).toBe(true);
  expect(await isFree(metricsPort)).toBe(true);
}

describe('npm start', () => {
  it(
    "stops the server on SIGTERM to npm's process: the shutdown line, then both ports free",
    async () => {
      await startAndStop([], (npm) => npm.kill('SIGTERM'), 'SIGTERM');
    },
    START_DEADLINE_MS + 3 * STOP_DEADLINE_MS,
  );

  it(
    'takes Ctrl-C, which reaches npm and the server both, as one stop: a clean drain',
    async () => {
      // Once dist/ is built, --ignore-scripts skips prestart; npm still runs the start script itself.
      const built = existsSync(join(copy, 'dist', 'cli', 'main.js'));
      await startAndStop(built ? ['--ignore-scripts'] : [], (npm) => process.kill(-groupOf(npm), 'SIGINT'), 'SIGINT');
    },
    START_DEADLINE_MS + 3 * STOP_DEADLINE_MS,
  );
});
