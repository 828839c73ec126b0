/**
 * Certificate rotation as Kubernetes performs it, under load: the Secret volume's `..data` symlink is swapped
 * while requests run over real TLS sockets. No request may fail, connections opened before the swap carry on
 * with the old certificate, and the first new connection after the reload sees the new one. Every step waits
 * for an event (a reload, requests completed), never for a time, so a busy machine only makes it slower.
 */
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTlsMaterial } from '../../src/server/tls/material.js';
import { startTlsReloader, type TlsReloader } from '../../src/server/tls/reloader.js';
import { systemClock } from '../../src/time/clock.js';
import { directoryWatcher } from '../../src/file-watch/directory-watch.js';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { waitUntil } from '../support/wait-until.js';
import { postJson, type HttpResult } from './support/https-client.js';
import { createKubeVolume, swapKubeVolume } from './support/kube-volume.js';
import { servingPki, temporaryDirectory } from './support/pki.js';
import { startTestServer, type TestServer } from './support/server.js';

const basic = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic');
if (basic === undefined) throw new Error('conformance case agent-runtime-basic is missing');

let server: TestServer;
let reloader: TlsReloader;
let volume: string;
let trust: Buffer[];
let next: { cert: Buffer; key: Buffer; fingerprint: string };
let firstFingerprint: string;
let removeDir: () => Promise<void>;
/** Set at the reload that serves `next`. */
let nextServed = false;

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('tls-swap');
  removeDir = remove;
  const a = await servingPki(`${dir}/a`);
  const b = await servingPki(`${dir}/b`);
  volume = `${dir}/webhook-certs`;
  await createKubeVolume(volume, { 'tls.crt': await readFile(a.certFile), 'tls.key': await readFile(a.keyFile) });
  const files = { certFile: `${volume}/tls.crt`, keyFile: `${volume}/tls.key` };

  server = await startTestServer({ tls: files, caFile: a.caCertFile });
  server.setConfig(basic.configMap?.data as Record<string, string>);
  const initial = await loadTlsMaterial(files);
  firstFingerprint = initial.fingerprint256;
  const nextMaterial = await loadTlsMaterial(b);
  reloader = startTlsReloader({
    files,
    initial,
    target: server.app.server,
    watch: directoryWatcher({ debounceMs: 100, resyncMs: 0, clock: systemClock, onError: () => undefined }),
    clock: systemClock,
    attempts: 5,
    retryDelayMs: 100,
    onResult: (result) => {
      if (result.kind === 'reloaded' && result.material.fingerprint256 === nextMaterial.fingerprint256)
        nextServed = true;
    },
  });
  next = { cert: nextMaterial.cert, key: nextMaterial.key, fingerprint: nextMaterial.fingerprint256 };
  trust = [await readFile(a.caCertFile), await readFile(b.caCertFile)];
});

afterAll(async () => {
  await reloader.close();
  await server.close();
  await removeDir();
});

interface LoopReport {
  ok: number;
  failures: string[];
  fingerprints: Set<string>;
}

/** Sends reviews back to back until `stop` says so; any error or non-200 is a failure. */
async function requestLoop(stop: () => boolean, agent: Agent | undefined, report: LoopReport): Promise<void> {
  let n = 0;
  while (!stop()) {
    n += 1;
    let result: HttpResult;
    try {
      const options = agent === undefined ? { ca: trust } : { ca: trust, agent };
      result = await postJson(`${server.url}/mutate`, reviewFor(basic?.pod, `swap-${n}`), options);
    } catch (error) {
      report.failures.push(error instanceof Error ? error.message : String(error));
      continue;
    }
    if (result.status === 200) report.ok += 1;
    else report.failures.push(`HTTP ${result.status}: ${result.text}`);
    report.fingerprints.add(result.peerFingerprint);
  }
}

/** Waits until every loop has completed (or failed) at least two more requests than now. */
async function allProgressed(reports: readonly LoopReport[]): Promise<void> {
  const done = (r: LoopReport): number => r.ok + r.failures.length;
  const start = reports.map(done);
  await waitUntil(() => reports.map((r, i) => done(r) - (start[i] ?? 0)), {
    what: 'every request loop to complete two more requests',
    timeoutMs: 10_000,
    until: (progress) => progress.every((n) => n >= 2),
  });
}

describe('certificate swap by ..data symlink under load', () => {
  it('fails no request; the first new connection after the reload gets the new certificate', async () => {
    let stopped = false;
    const stop = (): boolean => stopped;
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 2 });
    const reports: LoopReport[] = Array.from({ length: 4 }, () => ({ ok: 0, failures: [], fingerprints: new Set() }));
    const [freshA, freshB, reusedA, reusedB] = reports as [LoopReport, LoopReport, LoopReport, LoopReport];
    const loops = [
      requestLoop(stop, undefined, freshA),
      requestLoop(stop, undefined, freshB),
      requestLoop(stop, keepAlive, reusedA),
      requestLoop(stop, keepAlive, reusedB),
    ];

    await allProgressed(reports);
    await swapKubeVolume(volume, { 'tls.crt': next.cert, 'tls.key': next.key });
    await waitUntil(() => nextServed, { what: 'the reload that serves the new certificate', timeoutMs: 10_000 });
    const probe = await postJson(`${server.url}/mutate`, reviewFor(basic.pod), { ca: trust });
    // Load went on across the swap: every loop completes requests after the reload too.
    await allProgressed(reports);
    stopped = true;
    await Promise.all(loops);
    keepAlive.destroy();

    expect(probe.peerFingerprint).toBe(next.fingerprint);
    expect(reports.flatMap((r) => r.failures)).toEqual([]);
    // Fresh connections saw both certificates; kept-alive ones were never cut, so they kept the first.
    expect(freshA.fingerprints).toEqual(new Set([firstFingerprint, next.fingerprint]));
    expect(reusedA.fingerprints).toEqual(new Set([firstFingerprint]));
    expect(reloader.current.fingerprint256).toBe(next.fingerprint);
  });
});
