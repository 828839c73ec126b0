/** `sandbox-injector deliver-env` as a process: --help and -h exit 0, usage errors exit 2 naming the flag. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MAIN } from '../server/support/child-server.js';

const run = promisify(execFile);

async function exitOf(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  // Run as outside a pod, whatever machine the tests are on.
  const outside = { ...process.env };
  delete outside.KUBERNETES_SERVICE_HOST;
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, 'deliver-env', ...args], {
      env: { ...outside, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('sandbox-injector deliver-env', () => {
  it.each([['--help'], ['-h']])('%s prints every option with its env var and exits 0', async (flag) => {
    const { code, stdout } = await exitOf([flag]);
    expect(code).toBe(0);
    for (const text of [
      '--env-dir',
      'SANDBOX_INJECTOR_ENV_DIR',
      '--lease-namespace',
      '--runtime-port',
      '[default: /var/sandbox]',
    ]) {
      expect(stdout).toContain(text);
    }
  });

  it.each([
    [['--no-such-flag'], /no-such-flag/],
    [['--kubeconfig', '/x', '--runtime-port', '0'], /--runtime-port \(SANDBOX_INJECTOR_RUNTIME_PORT\)/],
    [['--kubeconfig', '/x', '--env-dir', 'relative'], /--env-dir/],
    [['--kubeconfig', '/x', '--env-dir', '/srv/a"b'], /--env-dir/],
    [['--kubeconfig', '/x', '--env-dir', '/srv/a\\b'], /--env-dir/],
    [['--kubeconfig', '/x', '--env-dir', '/srv/a\nb'], /--env-dir/],
    [['--kubeconfig', '/x', '--backoff-min', '5s', '--backoff-max', '100ms'], /must not exceed --backoff-max/],
    [['--kubeconfig', '/x', '--backoff-min-ms', '500'], /--backoff-min-ms is now --backoff-min/],
    [[], /needs --kubeconfig/],
  ])('%j is a usage error: exit 2', async (args, message) => {
    const { code, stderr } = await exitOf(args);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it('takes an option from its env var, the flag winning over it', async () => {
    const fromEnv = await exitOf(['--kubeconfig', '/x'], { SANDBOX_INJECTOR_LEASE_DURATION: '1s' });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toMatch(/SANDBOX_INJECTOR_LEASE_DURATION/);
    const flagWins = await exitOf(['--kubeconfig', '/x', '--lease-duration', '1s'], {
      SANDBOX_INJECTOR_LEASE_DURATION: '15s',
    });
    expect(flagWins.code).toBe(2);
  });
});
