/**
 * Writes a set of files so that a reader sees either all the old ones or all the new ones, the way the
 * kubelet updates a mounted Secret:
 *
 *   dir/..2026_11_29_20_30_00.123_ab12cd/   the files of one version (a new directory per version)
 *   dir/..data -> ..2026_11_29_20_30_00.123_ab12cd
 *   dir/tls.crt -> ..data/tls.crt            (likewise every file name)
 *
 * A new version is written into a fresh directory, then a new `..data` link is renamed over the old one:
 * rename(2) is atomic, so a certificate is never read with the key of another version. The server's
 * directory watcher sees the rename and reloads; the previous version directories are removed afterwards.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, readlink, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const DATA_LINK = '..data';
const DATA_LINK_TMP = '..data_tmp';

export interface AtomicFile {
  content: string;
  mode: number;
}

export type AtomicWriteResult = 'written' | 'unchanged';

/** The contents as a reader would see them now; undefined when any file is missing or unreadable. */
export async function readAtomicDir(
  dir: string,
  names: readonly string[],
): Promise<Record<string, string> | undefined> {
  try {
    const entries = await Promise.all(
      names.map(async (name) => [name, await readFile(join(dir, name), 'utf8')] as const),
    );
    return Object.fromEntries(entries);
  } catch {
    // Missing (first start) or half-removed by hand: either way the next write replaces everything.
    return undefined;
  }
}

export async function writeAtomicDir(
  dir: string,
  files: Readonly<Record<string, AtomicFile>>,
  now: Date,
): Promise<AtomicWriteResult> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const names = Object.keys(files);
  const current = await readAtomicDir(dir, names);
  if (current !== undefined && names.every((name) => current[name] === files[name]?.content)) {
    // Same bytes: no swap, so the server's watcher does not fire for nothing.
    return 'unchanged';
  }

  const version = `..${stamp(now)}_${randomBytes(3).toString('hex')}`;
  await mkdir(join(dir, version), { mode: 0o755 });
  for (const [name, file] of Object.entries(files)) {
    await writeFile(join(dir, version, name), file.content, { mode: file.mode, flag: 'wx' });
  }

  await rm(join(dir, DATA_LINK_TMP), { force: true });
  await symlink(version, join(dir, DATA_LINK_TMP));
  await rename(join(dir, DATA_LINK_TMP), join(dir, DATA_LINK));

  for (const name of names) await ensureLink(dir, name);
  await removeOldVersions(dir, version);
  return 'written';
}

/** `dir/name -> ..data/name`, replacing a regular file or a wrong link atomically. */
async function ensureLink(dir: string, name: string): Promise<void> {
  const path = join(dir, name);
  const target = `${DATA_LINK}/${name}`;
  try {
    const info = await lstat(path);
    if (info.isSymbolicLink() && (await readlink(path)) === target) return;
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  const temporary = join(dir, `.${name}.${randomBytes(3).toString('hex')}.tmp`);
  await symlink(target, temporary);
  await rename(temporary, path);
}

async function removeOldVersions(dir: string, keep: string): Promise<void> {
  for (const entry of await readdir(dir)) {
    if (!entry.startsWith('..') || entry === keep || entry === DATA_LINK || entry === DATA_LINK_TMP) continue;
    await rm(join(dir, entry), { recursive: true, force: true });
  }
  // A leftover temporary link from a write that died between symlink and rename.
  await unlink(join(dir, DATA_LINK_TMP)).catch((error: unknown) => {
    if (!isMissing(error)) throw error;
  });
}

/** `2026_11_29_20_30_00.123`, like the kubelet's version directories, so `ls` sorts them by age. */
function stamp(now: Date): string {
  const iso = now.toISOString(); // 2026-11-29T20:30:00.123Z
  return iso.slice(0, 23).replace(/[-T:]/g, '_');
}

function isMissing(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'ENOENT';
}
