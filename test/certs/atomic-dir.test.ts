import { lstat, mkdtemp, readFile, readdir, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DATA_LINK, readAtomicDir, writeAtomicDir } from '../../src/certs/atomic-dir.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'atomic-dir-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const files = (cert: string, key: string) => ({
  'tls.crt': { content: cert, mode: 0o644 },
  'tls.key': { content: key, mode: 0o600 },
});

describe('writeAtomicDir', () => {
  it('lays the files out as the kubelet does: name -> ..data/name -> a version directory', async () => {
    expect(await writeAtomicDir(dir, files('C1', 'K1'), new Date('2030-01-02T03:04:05.678Z'))).toBe('written');
    expect(await readlink(join(dir, 'tls.crt'))).toBe(`${DATA_LINK}/tls.crt`);
    expect(await readlink(join(dir, 'tls.key'))).toBe(`${DATA_LINK}/tls.key`);
    const version = await readlink(join(dir, DATA_LINK));
    expect(version).toMatch(/^\.\.2030_01_02_03_04_05\.678_[0-9a-f]{6}$/);
    expect(await readFile(join(dir, 'tls.crt'), 'utf8')).toBe('C1');
    expect((await stat(join(dir, version, 'tls.key'))).mode & 0o777).toBe(0o600);
    expect(await readAtomicDir(dir, ['tls.crt', 'tls.key'])).toEqual({ 'tls.crt': 'C1', 'tls.key': 'K1' });
  });

  it('does nothing when the bytes are the same, and swaps in a new version otherwise', async () => {
    const now = new Date();
    await writeAtomicDir(dir, files('C1', 'K1'), now);
    const first = await readlink(join(dir, DATA_LINK));
    expect(await writeAtomicDir(dir, files('C1', 'K1'), now)).toBe('unchanged');
    expect(await readlink(join(dir, DATA_LINK))).toBe(first);

    expect(await writeAtomicDir(dir, files('C2', 'K2'), now)).toBe('written');
    const second = await readlink(join(dir, DATA_LINK));
    expect(second).not.toBe(first);
    expect(await readAtomicDir(dir, ['tls.crt', 'tls.key'])).toEqual({ 'tls.crt': 'C2', 'tls.key': 'K2' });
    // The previous version is removed; only the live version, the link and the file links remain.
    expect((await readdir(dir)).sort()).toEqual([DATA_LINK, second, 'tls.crt', 'tls.key'].sort());
  });

  it('replaces plain files and leftovers of an interrupted write', async () => {
    await writeFile(join(dir, 'tls.crt'), 'old plain file');
    await writeFile(join(dir, '..data_tmp'), 'leftover');
    await writeAtomicDir(dir, files('C', 'K'), new Date());
    expect((await lstat(join(dir, 'tls.crt'))).isSymbolicLink()).toBe(true);
    expect(await readFile(join(dir, 'tls.crt'), 'utf8')).toBe('C');
    expect(await readdir(dir)).not.toContain('..data_tmp');
  });

  it('reads a missing or incomplete directory as undefined', async () => {
    expect(await readAtomicDir(join(dir, 'nope'), ['tls.crt'])).toBeUndefined();
    await writeFile(join(dir, 'tls.crt'), 'C');
    expect(await readAtomicDir(dir, ['tls.crt', 'tls.key'])).toBeUndefined();
  });
});
