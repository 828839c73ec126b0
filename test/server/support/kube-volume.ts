/**
 * A directory laid out as the kubelet lays out a Secret or ConfigMap volume, and changed the way it changes
 * it: files are symlinks through `..data`, which is swapped atomically to a new timestamped directory.
 */
import { mkdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

let generation = 0;

async function writeGeneration(dir: string, files: Record<string, string | Buffer>): Promise<string> {
  generation += 1;
  const name = `..2026_11_29_00_00_${String(generation).padStart(2, '0')}.${process.pid}`;
  await mkdir(join(dir, name));
  for (const [file, content] of Object.entries(files)) await writeFile(join(dir, name, file), content);
  return name;
}

export async function createKubeVolume(dir: string, files: Record<string, string | Buffer>): Promise<void> {
  await mkdir(dir, { recursive: true });
  const name = await writeGeneration(dir, files);
  await symlink(name, join(dir, '..data'));
  for (const file of Object.keys(files)) await symlink(join('..data', file), join(dir, file));
}

/** New contents for every file at once, as the kubelet's AtomicWriter does. */
export async function swapKubeVolume(dir: string, files: Record<string, string | Buffer>): Promise<void> {
  const previous = await readlink(join(dir, '..data'));
  const name = await writeGeneration(dir, files);
  await symlink(name, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  await rm(join(dir, previous), { recursive: true, force: true });
}
