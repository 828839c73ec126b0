import { chmod, copyFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CliError, type CliIo, writeLine } from './io.js';

/** The wrapper as shipped in the package (dist/cli -> src/wrapper). */
const WRAPPER_SOURCE = fileURLToPath(new URL('../../src/wrapper/run_with_envs.sh', import.meta.url));

/**
 * Copies run_with_envs.sh into a directory. The optional init container runs this, because the injector's
 * image has no shell or `cp` of its own.
 */
export async function installWrapperCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { dir: { type: 'string' } }, strict: true });
  if (values.dir === undefined) throw new CliError('--dir is required');
  const target = join(values.dir, 'run_with_envs.sh');
  const partial = `${target}.tmp-${process.pid}`;
  await copyFile(WRAPPER_SOURCE, partial);
  await chmod(partial, 0o755);
  // A container that starts early must never find a half-written script.
  await rename(partial, target);
  writeLine(io.stdout, `installed ${target}`);
  return 0;
}
