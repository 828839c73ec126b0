/**
 * The reload decisions, driven by hand: a fake watcher, a fake sleep and a scripted file reader. The real
 * watcher and real sockets are in tls-swap.test.ts.
 */
import { readFile } from 'node:fs/promises';
import type { SecureContextOptions } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTlsMaterial, type TlsFiles, type TlsMaterial } from '../../src/server/tls/material.js';
import { startTlsReloader, type TlsReloadResult, type TlsReloader } from '../../src/server/tls/reloader.js';
import { servingPki, temporaryDirectory } from './support/pki.js';
import { ManualClock } from '../support/manual-clock.js';

interface Pair {
  cert: Buffer;
  key: Buffer;
}

let pairA: Pair;
let pairB: Pair;
let materialA: TlsMaterial;
let removeDir: () => Promise<void>;
const files: TlsFiles = { certFile: '/etc/webhook/certs/tls.crt', keyFile: '/etc/webhook/certs/tls.key' };

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('reloader');
  removeDir = remove;
  const read = async (pki: { certFile: string; keyFile: string }): Promise<Pair> => ({
    cert: await readFile(pki.certFile),
    key: await readFile(pki.keyFile),
  });
  const a = await servingPki(`${dir}/a`);
  pairA = await read(a);
  pairB = await read(await servingPki(`${dir}/b`));
  materialA = await loadTlsMaterial(a);
});
afterAll(() => removeDir());

/** What the files hold at each read: the script advances one step per read of the certificate. */
function scriptedFiles(steps: { cert: Buffer | Error; key: Buffer | Error }[]): (path: string) => Promise<Buffer> {
  let step = -1;
  return (path) => {
    if (path === files.certFile) step = Math.min(step + 1, steps.length - 1);
    const current = steps[Math.max(step, 0)];
    const value = path === files.certFile ? current?.cert : current?.key;
    if (value === undefined) return Promise.reject(new Error(`unexpected read of ${path}`));
    return value instanceof Error ? Promise.reject(value) : Promise.resolve(value);
  };
}

function enoent(): Error {
  return Object.assign(new Error('ENOENT: no such file or directory'), { code: 'ENOENT' });
}

interface Rig {
  reloader: TlsReloader;
  applied: SecureContextOptions[];
  results: TlsReloadResult[];
  sleeps: number[];
  watchedDirs: readonly string[];
  fireChange: () => void;
  watcherClosed: () => boolean;
}

function rig(readFileImpl: (path: string) => Promise<Buffer>, attempts = 4): Rig {
  const applied: SecureContextOptions[] = [];
  const results: TlsReloadResult[] = [];
  const clock = new ManualClock({ fastForward: true });
  let onChange: () => void = () => undefined;
  let watchedDirs: readonly string[] = [];
  let closed = false;
  const reloader = startTlsReloader({
    files,
    initial: materialA,
    target: { setSecureContext: (options) => applied.push(options) },
    watch: (dirs, callback) => {
      watchedDirs = dirs;
      onChange = callback;
      return { close: () => (closed = true) };
    },
    clock,
    readFile: readFileImpl,
    attempts,
    retryDelayMs: 250,
    onResult: (result) => results.push(result),
  });
  return {
    reloader,
    applied,
    results,
    sleeps: clock.waits,
    watchedDirs,
    fireChange: () => onChange(),
    watcherClosed: () => closed,
  };
}

describe('startTlsReloader', () => {
  it('watches the directories holding the files, not the files', () => {
    const { watchedDirs } = rig(scriptedFiles([{ cert: pairA.cert, key: pairA.key }]));
    expect(watchedDirs).toEqual(['/etc/webhook/certs', '/etc/webhook/certs']);
  });

  it('leaves the server alone when the bytes did not change', async () => {
    const { reloader, applied, results } = rig(scriptedFiles([{ cert: pairA.cert, key: pairA.key }]));
    expect(await reloader.reload()).toEqual({ kind: 'unchanged' });
    expect(applied).toEqual([]);
    expect(results).toEqual([{ kind: 'unchanged' }]);
  });

  it('installs a new matching pair as the secure context, TLS 1.2 minimum', async () => {
    const { reloader, applied } = rig(scriptedFiles([{ cert: pairB.cert, key: pairB.key }]));
    const result = await reloader.reload();
    expect(result).toMatchObject({ kind: 'reloaded', attempts: 1 });
    expect(applied).toHaveLength(1);
    expect(applied[0]).toMatchObject({ cert: pairB.cert, key: pairB.key, minVersion: 'TLSv1.2' });
    expect(reloader.current.cert).toEqual(pairB.cert);
    expect(reloader.current.notAfter.getTime()).toBeGreaterThan(Date.now());
  });

  it('reads a half-written pair again until the key matches', async () => {
    const { reloader, applied, sleeps } = rig(
      scriptedFiles([
        { cert: pairB.cert, key: pairA.key },
        { cert: pairB.cert, key: enoent() },
        { cert: pairB.cert, key: pairB.key },
      ]),
    );
    expect(await reloader.reload()).toMatchObject({ kind: 'reloaded', attempts: 3 });
    expect(sleeps).toEqual([250, 250]);
    expect(applied).toHaveLength(1);
  });

  it('gives up on a pair that never matches and keeps serving the old one', async () => {
    const { reloader, applied, results } = rig(scriptedFiles([{ cert: pairB.cert, key: pairA.key }]), 3);
    const result = await reloader.reload();
    expect(result).toMatchObject({ kind: 'failed', attempts: 3 });
    expect(result.kind === 'failed' && result.message).toMatch(/does not match certificate/);
    expect(applied).toEqual([]);
    expect(reloader.current).toBe(materialA);
    expect(results).toHaveLength(1);
  });

  it('refuses a certificate that is not PEM, naming the file', async () => {
    const { reloader } = rig(scriptedFiles([{ cert: Buffer.from('garbage'), key: pairB.key }]), 1);
    const result = await reloader.reload();
    expect(result.kind === 'failed' && result.message).toContain('certificate /etc/webhook/certs/tls.crt');
  });

  it('collapses a burst of changes into one follow-up reload', async () => {
    let reads = 0;
    const { reloader, fireChange } = rig((path) => {
      if (path === files.certFile) reads += 1;
      return Promise.resolve(path === files.certFile ? pairB.cert : pairB.key);
    });
    fireChange();
    fireChange();
    fireChange();
    await reloader.reload();
    expect(reads).toBe(2);
  });

  it('reloads a changed client CA with the pair, into the same secure context', async () => {
    const withCa = { ...files, clientCaFile: '/etc/webhook/client-ca/ca.crt' };
    const initial = await loadTlsMaterial(withCa, (path) =>
      Promise.resolve(path === files.keyFile ? pairA.key : pairA.cert),
    );
    const applied: SecureContextOptions[] = [];
    const dirs: string[] = [];
    const reloader = startTlsReloader({
      files: withCa,
      initial,
      target: { setSecureContext: (options) => applied.push(options) },
      watch: (watched) => (dirs.push(...watched), { close: () => undefined }),
      clock: new ManualClock({ fastForward: true }),
      readFile: (path) =>
        Promise.resolve(path === files.keyFile ? pairA.key : path === files.certFile ? pairA.cert : pairB.cert),
      attempts: 1,
      retryDelayMs: 0,
      onResult: () => undefined,
    });
    expect(await reloader.reload()).toMatchObject({ kind: 'reloaded' });
    expect(applied[0]).toMatchObject({ cert: pairA.cert, key: pairA.key, ca: pairB.cert });
    expect(dirs).toContain('/etc/webhook/client-ca');
  });

  it('close() stops watching', async () => {
    const { reloader, watcherClosed } = rig(scriptedFiles([{ cert: pairA.cert, key: pairA.key }]));
    await reloader.close();
    expect(watcherClosed()).toBe(true);
  });
});
