// run_with_envs.sh spells the env folder's names itself (it is shipped and run as it is, without the TypeScript
// that reads src/wrapper/env-dir.ts); these run it under bash and hold its names to that module's.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ENV_DIR,
  ENV_DIR_VARIABLE,
  ENV_FILE_NAME,
  READY_FILE_NAME,
  WAKE_FILE_NAME,
  WRAPPER_PATH,
  WRAPPER_SCRIPT,
} from '../../src/wrapper/env-dir.js';
import { WRAPPER_PATH as SCRIPT, makeTempDir, removeDir } from './run-wrapper.js';

const run = promisify(execFile);
const PATH = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';

/**
 * The folder and the four paths the script works with (the last is its own copy there, which it takes as root),
 * as bash has them once the script has set itself up. `--help` ends the script right after that setup, with an
 * `exit` that is a function of ours here: bash looks up functions before builtins, so it prints what the script
 * set instead of leaving at once.
 */
async function scriptPaths(env: Record<string, string>): Promise<string[]> {
  const printAndExit =
    'exit() { printf "%s\\n" "$env_dir" "$env_file" "$ready_file" "$wake_file" "$script_file"; builtin exit 0; }';
  const { stdout } = await run('bash', ['-c', `${printAndExit}; source "$0" --help`, SCRIPT], {
    env: { PATH, ...env },
    timeout: 10_000,
  });
  return stdout.split('\n').slice(0, -1);
}

/** What scriptPaths prints for a folder, by the module's names. */
function pathsIn(folder: string): string[] {
  const names = [ENV_FILE_NAME, READY_FILE_NAME, WAKE_FILE_NAME, WRAPPER_SCRIPT];
  return [folder, ...names.map((name) => path.posix.join(folder, name))];
}

describe('run_with_envs.sh and src/wrapper/env-dir.ts', () => {
  it('is the script the module names', () => {
    expect(path.basename(SCRIPT)).toBe(WRAPPER_SCRIPT);
    expect(WRAPPER_PATH).toBe(path.posix.join(ENV_DIR, WRAPPER_SCRIPT));
  });

  it('uses the env folder and file names of the module when nothing moves the folder', async () => {
    expect(await scriptPaths({})).toEqual(pathsIn(ENV_DIR));
  });

  it(`moves the folder by ${ENV_DIR_VARIABLE}, keeping the file names`, async () => {
    expect(await scriptPaths({ [ENV_DIR_VARIABLE]: '/run/claim-env' })).toEqual(pathsIn('/run/claim-env'));
  });

  describe('in a folder written with the module names', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await makeTempDir('env-dir-names');
    });
    afterEach(async () => {
      await removeDir(dir);
    });

    const probe = (command: string) =>
      run('bash', [SCRIPT, '--probe', '--', 'bash', '-c', command], {
        env: { PATH, [ENV_DIR_VARIABLE]: dir },
        timeout: 10_000,
      });

    it('counts the sandbox unclaimed until the ready file exists, then runs with the env file loaded', async () => {
      await writeFile(path.join(dir, ENV_FILE_NAME), "GREETING='from the module'\n", { mode: 0o600 });
      // Unclaimed, a probe passes without running: the failing command is not run yet.
      await expect(probe('exit 3')).resolves.toMatchObject({ stdout: '' });
      await writeFile(path.join(dir, READY_FILE_NAME), '');
      await expect(probe('printf %s "$GREETING"')).resolves.toMatchObject({ stdout: 'from the module' });
      await expect(probe('exit 3')).rejects.toMatchObject({ code: 3 });
    });
  });
});
