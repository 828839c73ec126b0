import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { RECYCLED_FILE_NAME } from '../../src/wrapper/env-dir.js';
import {
  makeTempDir,
  removeDir,
  runWrapper,
  signalReady,
  startWrapper,
  waitForFile,
  waitUntilWaiting,
  within,
  writeWake,
} from './run-wrapper.js';

/** Far above the wrapper's own bounds (3 s to stop, 5 s between looks): only a wrapper that never ends fails it. */
const DEADLINE_MS = 20_000;

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('recycle');
});

afterEach(async () => {
  await removeDir(dir);
});

/**
 * What clearing leaves when a claim ends (docs/env-file.md): the mark, then a wake. The wake finds no reader
 * while the wrapper's watch has not opened the FIFO yet; the watch then finds the mark as it starts.
 */
async function endClaim(): Promise<void> {
  await writeFile(path.join(dir, RECYCLED_FILE_NAME), 'container main containerd://0\n');
  await writeWake(dir);
}

describe('run_with_envs.sh supervising the command', () => {
  it('ends the command when its claim ends: SIGTERM, then the container exits 75 to restart', async () => {
    await signalReady(dir, '');
    const up = path.join(dir, 'up');
    const got = path.join(dir, 'got');
    const script = 'trap \'echo TERM > "$2"; exit 0\' TERM; : > "$1"; while :; do sleep 0.05; done';
    const run = startWrapper(['--', 'bash', '-c', script, 'bash', up, got], { envDir: dir });
    await waitForFile(up);
    await endClaim();
    const result = await within(run.done, DEADLINE_MS, 'the wrapper');
    expect(await readFile(got, 'utf8')).toBe('TERM\n');
    expect(result.code).toBe(75);
    expect(result.stderr).toContain('the claim ended');
  });

  it('kills a command that ignores SIGTERM once the stop bound has passed', async () => {
    await signalReady(dir, '');
    const up = path.join(dir, 'up');
    const run = startWrapper(['--', 'bash', '-c', 'trap "" TERM; : > "$1"; while :; do sleep 0.05; done', 'bash', up], {
      envDir: dir,
    });
    await waitForFile(up);
    await endClaim();
    const result = await within(run.done, DEADLINE_MS, 'the wrapper');
    expect(result.code).toBe(75);
  });

  it("keeps its watch whatever env.sh sets: the claim's variables never reach the wrapper's own", async () => {
    // A claim's variable named like the wrapper's own state would, in the wrapper's shell, point the watch
    // elsewhere or stretch the stop for ever; env.sh is loaded only in the command's own process.
    const hostile = [
      'env_dir=/nonexistent',
      'recycled_file=/nonexistent/never',
      'wake_file=/nonexistent/wake',
      'recycle_poll_seconds=100000',
      'recycle_stop_seconds=100000',
      'recycled_status=0',
      'app_pid=1',
    ].join('\n');
    await signalReady(dir, `${hostile}\n`);
    const up = path.join(dir, 'up');
    const seen = path.join(dir, 'seen');
    const script = 'printf %s "$recycled_file" > "$2"; trap "" TERM; : > "$1"; while :; do sleep 0.05; done';
    const run = startWrapper(['--', 'bash', '-c', script, 'bash', up, seen], { envDir: dir });
    await waitForFile(up);
    // The command has the claim's variables,
    expect(await readFile(seen, 'utf8')).toBe('/nonexistent/never');
    await endClaim();
    // and the wrapper does not.
    const result = await within(run.done, DEADLINE_MS, 'the wrapper');
    expect(result.code).toBe(75);
  });

  it('passes every signal a container is sent on to the command, and returns its status', async () => {
    for (const [signal, status] of [
      ['SIGINT', 5],
      ['SIGHUP', 6],
      ['SIGQUIT', 7],
      ['SIGUSR1', 8],
    ] as const) {
      await signalReady(dir, '');
      const up = path.join(dir, `up-${signal}`);
      const name = signal.replace(/^SIG/, '');
      const script = `trap "exit ${status}" ${name}; : > "$1"; while :; do sleep 0.05; done`;
      const run = startWrapper(['--', 'bash', '-c', script, 'bash', up], { envDir: dir });
      await waitForFile(up);
      run.child.kill(signal);
      const result = await within(run.done, DEADLINE_MS, `the wrapper after ${signal}`);
      expect([signal, result.code]).toEqual([signal, status]);
    }
  });

  it('exits as a shell does when the command dies of a signal: 128 and its number', async () => {
    await signalReady(dir, '');
    const run = startWrapper(['--', 'bash', '-c', 'kill -KILL $$'], { envDir: dir });
    const result = await within(run.done, DEADLINE_MS, 'the wrapper');
    expect(result.code).toBe(137);
    expect(result.stderr).not.toContain('the claim ended');
  });
});

describe('run_with_envs.sh and an ended claim', () => {
  it('waits while the mark is there, even beside .env_ready, and runs the next claim once it is gone', async () => {
    // A late write of the ended claim: .env_ready back beside the mark. Its files are not the next claim's.
    await signalReady(dir, "export TENANT='a'\n");
    await writeFile(path.join(dir, RECYCLED_FILE_NAME), 'container main containerd://0\n');
    const run = startWrapper(['--', 'bash', '-c', 'printf %s "$TENANT"'], { envDir: dir });
    expect(await waitUntilWaiting(run.child.pid ?? -1, dir)).toBe('fifo');
    expect((await runWrapper(['--probe', '--', 'false'], { envDir: dir })).code).toBe(0);
    // The next claim's delivery (deliver-claim.ts): the late .env_ready, then the mark, then its files, the wake.
    await rm(path.join(dir, '.env_ready'));
    await rm(path.join(dir, RECYCLED_FILE_NAME));
    await signalReady(dir, "export TENANT='b'\n");
    await writeWake(dir);
    const result = await within(run.done, DEADLINE_MS, 'the wrapper');
    expect([result.code, result.stdout.toString()]).toEqual([0, 'b']);
  });
});
