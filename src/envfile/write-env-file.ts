import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';

import { EnvFileError } from './errors.js';
import { renderEnvFile, type EnvVars } from './render-env-file.js';
import { errorMessage } from '../errors/error-message.js';
import { ENV_FILE_NAME, READY_FILE_NAME, WAKE_FILE_NAME } from '../wrapper/env-dir.js';

export type { EnvVars } from './render-env-file.js';

/** env.sh may carry secrets; only its owner reads it. */
const ENV_FILE_MODE = 0o600;
/** The signal carries no data; the wrapper only checks that it exists. */
const READY_FILE_MODE = 0o644;

export interface WriteEnvFileResult {
  envFile: string;
  readyFile: string;
  count: number;
  /** A byte went into the wake FIFO: some wrapper held it open. */
  woken: boolean;
}

/**
 * Write `dir/env.sh` atomically, then create `dir/.env_ready`.
 *
 * The order is the contract with the wrapper: once the signal exists, env.sh is complete. A waiting
 * process therefore never sources a half-written file, and a refused request leaves no signal behind.
 */
export async function writeEnvFile(dir: string, vars: EnvVars): Promise<WriteEnvFileResult> {
  const content = renderEnvFile(vars);
  await assertDirectory(dir);
  const envFile = path.join(dir, ENV_FILE_NAME);
  const readyFile = path.join(dir, READY_FILE_NAME);
  await replaceFileAtomically(envFile, content, ENV_FILE_MODE);
  await createReadyFile(readyFile);
  const woken = await wakeWaiters(path.join(dir, WAKE_FILE_NAME));
  const count = Array.isArray(vars) ? vars.length : Object.keys(vars).length;
  return { envFile, readyFile, count, woken };
}

async function assertDirectory(dir: string): Promise<void> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(dir)).isDirectory();
  } catch (error) {
    throw new EnvFileError(`cannot use env directory ${dir}: ${errorMessage(error)}`, { cause: error });
  }
  if (!isDirectory) {
    throw new EnvFileError(`env directory ${dir} is not a directory`);
  }
}

/**
 * Readers see either the old file or the complete new one: write a temporary file in the same
 * directory (rename is only atomic within one filesystem), flush it to disk, then rename it over.
 */
async function replaceFileAtomically(target: string, content: string, mode: number): Promise<void> {
  const dir = path.dirname(target);
  const temp = path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  let renamed = false;
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(content, 'utf8');
      // open() applies the umask, which may have cleared bits of `mode`; set it exactly.
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, target);
    renamed = true;
    await syncDirectory(dir);
  } catch (error) {
    throw new EnvFileError(`cannot write ${target}: ${errorMessage(error)}`, { cause: error });
  } finally {
    if (!renamed) {
      // Best effort: a failed cleanup must not hide the error that got us here.
      await rm(temp, { force: true }).catch(() => undefined);
    }
  }
}

async function createReadyFile(readyFile: string): Promise<void> {
  try {
    // 'a' creates the file if needed and leaves an existing signal alone, so rewrites are idempotent.
    const handle = await open(readyFile, 'a', READY_FILE_MODE);
    await handle.close();
    await syncDirectory(path.dirname(readyFile));
  } catch (error) {
    throw new EnvFileError(`cannot create ${readyFile}: ${errorMessage(error)}`, { cause: error });
  }
}

/**
 * One byte into the wrapper's wake FIFO, if there is one with a reader (docs/env-file.md, "Waking the
 * wrapper"). Opened without blocking: no FIFO, no reader or a full pipe mean nobody to wake now, and a waiting
 * wrapper still finds .env_ready on its next look; so a failed wake is not an error of the write.
 */
async function wakeWaiters(wakeFile: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(wakeFile, constants.O_WRONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return false; // ENOENT: no wrapper made it; ENXIO: none holds it; ELOOP, EACCES: not ours to write
  }
  try {
    if (!(await handle.stat()).isFIFO()) return false;
    await handle.write('\n');
    return true;
  } catch {
    return false; // EAGAIN: the pipe is full of wakes nobody read
  } finally {
    await handle.close();
  }
}

/** Make a rename or create durable: the new directory entry is only on disk once the directory is synced. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch (error) {
    // Some filesystems cannot fsync a directory; the entry is still visible, only less durable.
    if (!isErrnoException(error) || (error.code !== 'EINVAL' && error.code !== 'EISDIR')) {
      throw error;
    }
  } finally {
    await handle.close();
  }
}

function isErrnoException(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && 'code' in error;
}
