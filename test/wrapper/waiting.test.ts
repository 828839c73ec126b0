/**
 * How run_with_envs.sh waits (docs/env-file.md, "What the wrapper does"): under real bash, watched from /proc.
 * The cost and the wake latency are figures, not assertions: `npm run bench` (docs/benchmark.md).
 */
import { spawn } from 'node:child_process';
import { chmod, mkdir, rename, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  exists,
  makeTempDir,
  processesStartedBy,
  removeDir,
  runWrapper,
  startWrapper,
  TENANT_UID,
  waitUntilWaiting,
  within,
  writeWake,
} from './run-wrapper.js';

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('wrapper-waiting');
});

afterEach(async () => {
  await removeDir(dir);
});

const WINDOW_MS = 3_000;
const DEADLINE_MS = 10_000;

/** A PATH with bash and nothing else: no mkfifo, no sleep, as in an image without coreutils. */
async function bashOnlyPath(): Promise<string> {
  const bin = path.join(dir, 'bin');
  await mkdir(bin);
  const bash = await new Promise<string>((resolve, reject) => {
    const which = spawn('bash', ['-c', 'type -P bash'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    which.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    which.on('error', reject);
    which.on('close', () => resolve(out.trim()));
  });
  await symlink(bash, path.join(bin, 'bash'));
  return bin;
}

/** .env_ready as deliver-env makes it: a temporary file renamed into place. */
async function renameReadyIntoPlace(): Promise<void> {
  const temp = path.join(dir, '.env_ready.tmp');
  await writeFile(temp, '');
  await rename(temp, path.join(dir, '.env_ready'));
}

describe('run_with_envs.sh waiting', () => {
  it("starts no process while it waits on the FIFO, which, run as root, it makes root's and 0600", async () => {
    const run = startWrapper(['--', 'true'], { envDir: dir });
    const pid = run.child.pid ?? -1;
    expect(await waitUntilWaiting(pid, dir)).toBe('fifo');
    const fifo = await stat(path.join(dir, '.env_wake'));
    // The tests run as root (folder-owner.test.ts has the FIFO of a wrapper run as another user: 0666).
    expect([fifo.isFIFO(), fifo.uid, fifo.mode & 0o777]).toEqual([true, 0, 0o600]);

    const started = await processesStartedBy(pid, WINDOW_MS);
    expect(started).toEqual({ seen: [], reapedFaults: 0 });
    run.child.kill('SIGTERM');
    expect((await within(run.done, DEADLINE_MS, 'exit on SIGTERM')).code).toBe(143);
  });

  it('the same watch catches a wait that forks, the one this wrapper had (sleep 0.1 in a loop)', async () => {
    const control = spawn('bash', ['-c', 'while :; do sleep 0.1; done'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => control.on('close', resolve));
    try {
      const started = await processesStartedBy(control.pid ?? -1, WINDOW_MS);
      expect(started.seen.length).toBeGreaterThan(0);
      expect(started.reapedFaults).toBeGreaterThan(0);
    } finally {
      control.kill('SIGKILL');
      await exited;
    }
  });

  it('wakes when .env_ready is renamed into place and the FIFO written, and runs the command', async () => {
    const run = startWrapper(['--', 'bash', '-c', 'printf "%s" "$GREETING"'], { envDir: dir });
    await waitUntilWaiting(run.child.pid ?? -1, dir);
    await writeFile(path.join(dir, 'env.sh'), "GREETING='woken'\n", { mode: 0o600 });
    await renameReadyIntoPlace();
    expect(await writeWake(dir)).toBe(true);
    const result = await within(run.done, DEADLINE_MS, 'the command after the wake');
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('woken');
  });

  it('also starts when only .env_ready appears, from a writer that does not write the FIFO', async () => {
    const run = startWrapper(['--', 'bash', '-c', 'echo started'], { envDir: dir });
    await waitUntilWaiting(run.child.pid ?? -1, dir);
    await renameReadyIntoPlace();
    const result = await within(run.done, DEADLINE_MS, 'the command without a wake');
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('started\n');
  });

  it('one wake starts every wrapper of the pod waiting on the FIFO', async () => {
    const runs = [0, 1, 2].map((i) => startWrapper(['--', 'bash', '-c', `echo ${i}`], { envDir: dir }));
    for (const run of runs) await waitUntilWaiting(run.child.pid ?? -1, dir);
    await renameReadyIntoPlace();
    expect(await writeWake(dir)).toBe(true);
    const results = await within(Promise.all(runs.map((run) => run.done)), DEADLINE_MS, 'three commands');
    expect(results.map((result) => [result.code, result.stdout.toString()])).toEqual([
      [0, '0\n'],
      [0, '1\n'],
      [0, '2\n'],
    ]);
  });

  it('runs the command at once when .env_ready is there at start, as its child', async () => {
    await writeFile(path.join(dir, '.env_ready'), '');
    const run = startWrapper(['--', 'bash', '-c', 'echo $PPID'], { envDir: dir });
    const result = await within(run.done, DEADLINE_MS, 'the command');
    expect(result.code).toBe(0);
    // The wrapper stays the command's parent, to end it when its claim ends.
    expect(result.stdout.toString()).toBe(`${run.child.pid}\n`);
  });
});

describe('run_with_envs.sh waiting without a FIFO', () => {
  it('when .env_wake is a plain file it cannot replace, waits on /dev/ptmx, starts no process, exits 143 on SIGTERM', async () => {
    // A file of another user in a folder the kubelet made (0777): a wrapper that is not root can only leave it
    // there (run as root, it takes the folder and replaces it: folder-owner.test.ts).
    await chmod(dir, 0o777);
    await writeFile(path.join(dir, '.env_wake'), '\n');
    const run = startWrapper(['--', 'true'], { envDir: dir, user: TENANT_UID });
    const pid = run.child.pid ?? -1;
    expect(await waitUntilWaiting(pid, dir)).toBe('ptmx');
    expect(await processesStartedBy(pid, WINDOW_MS)).toEqual({ seen: [], reapedFaults: 0 });
    run.child.kill('SIGTERM');
    const result = await within(run.done, DEADLINE_MS, 'exit on SIGTERM');
    expect(result.signal).toBeNull();
    expect(result.code).toBe(143);
  });

  it('with nothing but bash on PATH (no mkfifo, no sleep), still waits and starts on .env_ready', async () => {
    const bin = await bashOnlyPath();
    const run = startWrapper(['--', 'bash', '-c', 'echo started'], { envDir: dir, env: { PATH: bin } });
    await waitUntilWaiting(run.child.pid ?? -1, dir);
    await renameReadyIntoPlace();
    const result = await within(run.done, DEADLINE_MS, 'the command');
    expect(result.stderr).not.toMatch(/command not found/);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('started\n');
  });
});

describe('run_with_envs.sh --probe while waiting', () => {
  it('is unchanged: exits 0 at once before readiness, runs nothing and makes no FIFO', async () => {
    const ran = path.join(dir, 'probe-ran');
    const result = await runWrapper(['--probe', '--', 'bash', '-c', ': > "$1"; exit 3', 'bash', ran], {
      envDir: dir,
    });
    expect(result.code).toBe(0);
    expect(await exists(ran)).toBe(false);
    expect(await exists(path.join(dir, '.env_wake'))).toBe(false);
  });

  it('beside a waiting wrapper, neither reads its wake nor wakes it', async () => {
    const run = startWrapper(['--', 'true'], { envDir: dir });
    await waitUntilWaiting(run.child.pid ?? -1, dir);
    const probe = await runWrapper(['--probe', '--', 'false'], { envDir: dir });
    expect(probe.code).toBe(0);
    expect(run.child.exitCode).toBeNull();
    await renameReadyIntoPlace();
    expect(await writeWake(dir)).toBe(true);
    expect((await within(run.done, DEADLINE_MS, 'the command')).code).toBe(0);
  });
});
