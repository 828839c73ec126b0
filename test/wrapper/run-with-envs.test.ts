import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  exists,
  makeTempDir,
  removeDir,
  runWrapper,
  signalReady,
  startWrapper,
  processesStartedBy,
  waitForFile,
  waitUntilWaiting,
  writeWake,
} from './run-wrapper.js';

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('run-with-envs');
});

afterEach(async () => {
  await removeDir(dir);
});

/** Split `printf '%s\0' "$@"` output back into the arguments. */
function splitNul(output: Buffer): string[] {
  const parts = output.toString('utf8').split('\0');
  parts.pop();
  return parts;
}

describe('run_with_envs.sh main mode', () => {
  it('does not start the command before the signal file exists, then runs it with env.sh loaded', async () => {
    const marker = path.join(dir, 'started');
    const run = startWrapper(['--', 'bash', '-c', 'printf %s "$GREETING" > "$1"', 'bash', marker], { envDir: dir });

    // In its wait, then a stray wake with no .env_ready yet, and a second of watching (one poll round): a
    // wrapper that did not wait, or took any wake for readiness, would have run the command by then.
    await waitUntilWaiting(run.child.pid ?? -1, dir);
    expect(await writeWake(dir)).toBe(true);
    await processesStartedBy(run.child.pid ?? -1, 1_200);
    expect(await exists(marker)).toBe(false);
    expect(run.child.exitCode).toBeNull();

    await signalReady(dir, "export GREETING='hello claim'\n");
    const result = await run.done;

    expect(result.code).toBe(0);
    expect(await readFile(marker, 'utf8')).toBe('hello claim');
  });

  it('exports assignments from env.sh even without "export", and they override the container env', async () => {
    await signalReady(dir, "PLAIN='from env.sh'\nSHARED='claim value'\n");
    const result = await runWrapper(['--', 'bash', '-c', 'printf "%s|%s" "$PLAIN" "$SHARED"'], {
      envDir: dir,
      env: { SHARED: 'container value' },
    });
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('from env.sh|claim value');
  });

  it('passes arguments through intact: spaces, quotes, globs, empty strings, newlines', async () => {
    // Files in the working directory make any accidental globbing visible.
    await writeFile(path.join(dir, 'a.txt'), '');
    await writeFile(path.join(dir, 'b.txt'), '');
    await signalReady(dir, '');
    const args = [
      'with space',
      '"double"',
      "'single'",
      '*',
      '',
      '*.txt',
      '$HOME',
      '`id`',
      '$(id)',
      'a\\b',
      'two\nlines',
      ' leading and trailing ',
      'tab\there',
      '--',
      '--probe',
      '~',
      'ünïcødé ✓',
      '',
    ];
    const result = await runWrapper(['--', 'bash', '-c', 'printf "%s\\0" "$@"', 'argv0', ...args], { envDir: dir });
    expect(result.code).toBe(0);
    expect(splitNul(result.stdout)).toEqual(args);
  });

  it("propagates the command's exit status", async () => {
    await signalReady(dir, '');
    expect((await runWrapper(['--', 'bash', '-c', 'exit 42'], { envDir: dir })).code).toBe(42);
    expect((await runWrapper(['--', 'true'], { envDir: dir })).code).toBe(0);
    expect((await runWrapper(['--', 'no-such-command-for-wrapper-test'], { envDir: dir })).code).toBe(127);
  });

  it("runs the command as its child, with the container's stdin, and stays its parent", async () => {
    await signalReady(dir, '');
    const out = path.join(dir, 'out');
    const script = 'read -r line; printf "%s %s" "$PPID" "$line" > "$1"';
    const run = startWrapper(['--', 'bash', '-c', script, 'bash', out], { envDir: dir, stdin: 'from the container\n' });
    const result = await run.done;
    expect(result.code).toBe(0);
    expect(await readFile(out, 'utf8')).toBe(`${run.child.pid} from the container`);
  });

  it("delivers signals to the command and returns the command's status", async () => {
    await signalReady(dir, '');
    const up = path.join(dir, 'up');
    const script = 'trap "exit 7" TERM; : > "$1"; while :; do sleep 0.05; done';
    const run = startWrapper(['--', 'bash', '-c', script, 'bash', up], { envDir: dir });
    await waitForFile(up);
    run.child.kill('SIGTERM');
    const result = await run.done;
    expect(result.code).toBe(7);
  });

  it('exits promptly on SIGTERM while still waiting (bash as PID 1 would otherwise ignore it)', async () => {
    const run = startWrapper(['--', 'true'], { envDir: dir });
    expect(await waitUntilWaiting(run.child.pid ?? -1, dir)).toBe('fifo');
    run.child.kill('SIGTERM');
    const result = await run.done;
    // Exiting through the trap (143) rather than dying of the signal shows the handler is installed.
    expect(result.signal).toBeNull();
    expect(result.code).toBe(143);
  });

  it('runs the command without extra variables, with a note on stderr, when env.sh is missing', async () => {
    await signalReady(dir);
    const result = await runWrapper(['--', 'bash', '-c', 'printf %s "${GREETING-unset}"'], { envDir: dir });
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('unset');
    expect(result.stderr).toMatch(/env\.sh does not; running the command without extra variables/);
  });
});

describe('run_with_envs.sh --probe', () => {
  it('succeeds at once before readiness without running the probe', async () => {
    // Readiness never comes here: a probe that waited for it would never return, and the test would time out.
    const ran = path.join(dir, 'probe-ran');
    const result = await runWrapper(['--probe', '--', 'bash', '-c', ': > "$1"; exit 3', 'bash', ran], {
      envDir: dir,
    });
    expect(result.code).toBe(0);
    expect(await exists(ran)).toBe(false);
  });

  it('after readiness runs the probe with the loaded environment and returns its status', async () => {
    await signalReady(dir, "export PROBE_VAR='probe value'\n");
    const out = path.join(dir, 'probe-out');
    const probe = ['bash', '-c', 'printf %s "$PROBE_VAR" > "$1"; exit 3', 'bash', out];
    const failing = await runWrapper(['--probe', '--', ...probe], { envDir: dir });
    expect(failing.code).toBe(3);
    expect(await readFile(out, 'utf8')).toBe('probe value');

    const passing = await runWrapper(['--probe', '--', 'bash', '-c', '[ "$PROBE_VAR" = "probe value" ]'], {
      envDir: dir,
    });
    expect(passing.code).toBe(0);
  });
});

describe('run_with_envs.sh argument errors', () => {
  const noCommand: string[][] = [[], ['--'], ['--probe', '--'], ['--probe']];
  it.each(noCommand.map((args) => [args]))('with no command %j exits 0 with a message', async (args) => {
    const result = await runWrapper(args, { envDir: dir });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/no command/);
  });

  it('refuses an unknown option before -- with exit 2', async () => {
    const result = await runWrapper(['--bogus', '--', 'true'], { envDir: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown option '--bogus'");
  });

  it('refuses a command given without -- with exit 2', async () => {
    const result = await runWrapper(['true'], { envDir: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unexpected argument 'true' before '--'");
  });
});
