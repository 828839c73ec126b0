/**
 * Certificate rotations under load. The server reads its pair from a directory laid out as the kubelet lays
 * out a mounted Secret; each rotation swaps the `..data` symlink to a new pair, and fresh connections are
 * polled until they are served it. Every tenth rotation is preceded by a pair whose key does not match: it
 * must be refused, the pair in use kept.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createKubeVolume, swapKubeVolume } from '../test/server/support/kube-volume.js';
import { exchange, type Target } from './http.js';
import { NormalLoad, describeLoad, normalLoadSpec } from './load.js';
import { SoakPki, type ServingPair } from './pki.js';
import { Session, type PhaseResult, type PhaseRun } from './session.js';
import { median } from '../harness/quantiles.js';
import { Tally } from './tally.js';

const ADOPTION_TIMEOUT_MS = 10_000;
/** Longer than the server's debounce plus its five reads 400 ms apart: by then a bad pair would be in use. */
const BAD_PAIR_WATCH_MS = 3_000;
const POLL_MS = 50;

export async function rotationPhase({ dir, setup, options, timeoutMs }: PhaseRun): Promise<PhaseResult> {
  process.stderr.write('  rotation: making keys\n');
  const pki = new SoakPki();
  const caFile = join(dir, 'ca.crt');
  await mkdir(dir, { recursive: true });
  await writeFile(caFile, pki.caPem);
  const volume = join(dir, 'tls');
  const files = (pair: ServingPair): Record<string, string> => ({ 'tls.crt': pair.certPem, 'tls.key': pair.keyPem });
  let current = pki.serving(0);
  await createKubeVolume(volume, files(current));

  const session = await Session.open({
    dir,
    caFile,
    ...setup,
    args: [...setup.args, '--tls-cert-file', join(volume, 'tls.crt'), '--tls-key-file', join(volume, 'tls.key')],
  });
  const load = new NormalLoad(normalLoadSpec(session.target, timeoutMs));
  const probeErrors = new Tally();
  const adoption: number[] = [];
  let notAdopted = 0;
  let badServed = 0;
  let rotations = 0;
  const badEvery = Math.max(1, Math.floor(options.rotations / Math.max(1, options.badRotations)));
  const deadline = performance.now() + options.rotations * (ADOPTION_TIMEOUT_MS + BAD_PAIR_WATCH_MS);

  for (let k = 1; k <= options.rotations && session.server.alive && performance.now() < deadline; k += 1) {
    if (k % badEvery === 0) {
      await swapKubeVolume(volume, files(pki.mismatched(k)));
      const until = performance.now() + BAD_PAIR_WATCH_MS;
      while (performance.now() < until) {
        const seen = await servedFingerprint(session.target, probeErrors);
        if (seen !== undefined && seen !== current.fingerprint) badServed += 1;
        await sleep(POLL_MS * 4);
      }
    }
    const next = pki.serving(k);
    const swappedAt = performance.now();
    await swapKubeVolume(volume, files(next));
    let adopted = false;
    while (performance.now() - swappedAt < ADOPTION_TIMEOUT_MS) {
      if ((await servedFingerprint(session.target, probeErrors)) === next.fingerprint) {
        adopted = true;
        break;
      }
      await sleep(POLL_MS);
    }
    if (adopted) adoption.push(performance.now() - swappedAt);
    else notAdopted += 1;
    current = next;
    rotations += 1;
  }
  const report = await load.stop();
  adoption.sort((a, b) => a - b);

  const failed = report.failed.reduce((sum, [, n]) => sum + n, 0);
  const lost = report.lost.reduce((sum, [, n]) => sum + n, 0) + probeErrors.total;
  const notes = [
    `${rotations} rotations (..data swaps), ${Math.floor(rotations / badEvery)} of them preceded by a mismatched pair`,
    `new connections saw the new pair after p50 ${median(adoption).toFixed(0)} ms, max ${(adoption[adoption.length - 1] ?? 0).toFixed(0)} ms; never: ${notAdopted}`,
    `mismatched pairs served: ${badServed} probes${probeErrors.total > 0 ? `; probe connections that failed: ${probeErrors.summary()}` : ''}`,
    ...describeLoad(report),
  ];
  const broken: string[] = [];
  if (notAdopted > 0) broken.push(`rotation: ${notAdopted} pairs never served within ${ADOPTION_TIMEOUT_MS / 1000} s`);
  if (badServed > 0) broken.push(`rotation: a mismatched pair was served to ${badServed} probes`);
  return session.close('rotation', {
    tried: report.tried,
    failed,
    lost,
    fives: report.fives,
    normalLost: failed + lost,
    completed: rotations >= options.rotations,
    notes,
    broken,
  });
}

/** The certificate a fresh connection is served; a failed probe is counted, not thrown. */
async function servedFingerprint(target: Target, errors: Tally): Promise<string | undefined> {
  const outcome = await exchange(target, false, { method: 'GET', path: '/healthz', headers: {} }, 5_000);
  if (outcome.kind === 'answer') return outcome.fingerprint;
  errors.add(outcome.error);
  return undefined;
}
