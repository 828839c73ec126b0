import { chmod, copyFile, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { errorCode, errorMessage } from '../errors/error-message.js';
import { WRAPPER_SCRIPT } from '../wrapper/env-dir.js';
import { UsageError } from './command.js';
import { CliError, type CliIo, writeLine } from './io.js';

/** The wrapper as shipped in the package (dist/cli -> src/wrapper). */
const WRAPPER_SOURCE = fileURLToPath(new URL(`../../src/wrapper/${WRAPPER_SCRIPT}`, import.meta.url));

export const usage = `usage: sandbox-injector install-wrapper --dir DIR

Copies run_with_envs.sh into DIR as DIR/run_with_envs.sh (mode 0755, by rename, so a container that starts
early never finds half a script). The wrapper init container runs this: the injector's image has no shell or cp.
A DIR it cannot write that holds this very script already (a wrapper run as root took it) is left as it is.`;

/**
 * Copies run_with_envs.sh into a directory. The optional init container runs this, because the injector's
 * image has no shell or `cp` of its own.
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { dir: { type: 'string' } }, strict: true });
  if (values.dir === undefined || values.dir === '') throw new UsageError('--dir DIR is required');
  await requireDirectory(values.dir);
  const target = join(values.dir, WRAPPER_SCRIPT);
  const partial = `${target}.tmp-${process.pid}`;
  try {
    await copyFile(WRAPPER_SOURCE, partial);
    await chmod(partial, 0o755);
    // A container that starts early must never find a half-written script.
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    // A wrapper run as root took the folder (docs/env-file.md, "Who can change the folder"), and this init
    // container runs again when the pod's sandbox is made again: the script it would copy is there already.
    if (await sameContent(target, WRAPPER_SOURCE)) {
      writeLine(io.stdout, `${target} is in place already, unchanged (${values.dir} is not writable here)`);
      return 0;
    }
    throw new CliError(`cannot write ${target}: ${errorMessage(error)}`);
  }
  writeLine(io.stdout, `installed ${target}`);
  return 0;
}

/** Whether `file` holds the bytes of `source`; false when it cannot be read. */
async function sameContent(file: string, source: string): Promise<boolean> {
  try {
    const [there, shipped] = await Promise.all([readFile(file), readFile(source)]);
    return there.equals(shipped);
  } catch {
    return false;
  }
}

/** The directory is the caller's to make (a mounted volume); a missing one is named as such, not as a copy error. */
async function requireDirectory(dir: string): Promise<void> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(dir)).isDirectory();
  } catch (error) {
    throw new CliError(`--dir ${dir}: ${errorCode(error) === 'ENOENT' ? 'no such directory' : errorMessage(error)}`);
  }
  if (!isDirectory) throw new CliError(`--dir ${dir}: not a directory`);
}
