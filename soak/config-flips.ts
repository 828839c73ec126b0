/**
 * Config-file flips under load. The config lives in a directory laid out as the kubelet lays out a mounted
 * ConfigMap, and every flip swaps its `..data` symlink: to a new valid version (its sidecar images tagged
 * soak-N), to an invalid file (the server must keep what it has), or to nothing (the ConfigMap was deleted:
 * pods are admitted unchanged). Every answer names at most one version: two would be a half-applied config.
 *
 * Invalid flips are whole-file invalid on purpose: a single bad key keeps that key's last valid version
 * beside the others' new one, by design, and would read as a mix.
 */
import { readFile } from 'node:fs/promises';
import type { Agent } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse, stringify } from 'yaml';
import { createKubeVolume, swapKubeVolume } from '../test/server/support/kube-volume.js';
import { checkReviewAnswer } from './check.js';
import { exchange, keepAliveAgent, type Target } from './http.js';
import { NormalLoad, describeLoad, normalLoadSpec } from './load.js';
import { exampleReview, reviewText, type JsonObject } from './reviews.js';
import { repoPath } from '../harness/repo.js';
import { Session, type PhaseResult, type PhaseRun } from './session.js';
import { median } from '../harness/quantiles.js';
import { Tally } from './tally.js';

const FILE = 'injection-config.yaml';
const EFFECT_TIMEOUT_MS = 10_000;
/** Past the server's 250 ms debounce and its read: an invalid file would have taken effect by then. */
const INVALID_WATCH_MS = 1_000;
const POLL_MS = 50;

type FlipKind = 'valid' | 'invalid' | 'deleted';
/** Three valid, one invalid, one deleted, in a cycle of five. */
const CYCLE: readonly FlipKind[] = ['valid', 'valid', 'invalid', 'valid', 'deleted'];

const INVALID_FILES: readonly ((manifest: JsonObject) => string)[] = [
  () => 'apiVersion: v1\nkind: ConfigMap\ndata: [unclosed\n',
  (manifest) => stringify({ ...manifest, kind: 'Secret' }),
  (manifest) => stringify({ ...manifest, data: { ...(manifest.data as JsonObject), csi: 1 } }),
  (manifest) => `${stringify(manifest)}---\n${stringify(manifest)}`,
  () => '',
];

/** The manifest with every sidecar image of every key tagged `soak-<version>`. */
function versioned(manifest: JsonObject, version: number): string {
  const data: JsonObject = {};
  for (const [key, text] of Object.entries(manifest.data as Record<string, string>)) {
    const config = JSON.parse(text) as { csiSidecar?: { image?: string }[] };
    for (const sidecar of config.csiSidecar ?? []) {
      if (sidecar.image !== undefined) sidecar.image = `${sidecar.image.replace(/:[^:/]*$/, '')}:soak-${version}`;
    }
    data[key] = JSON.stringify(config);
  }
  return stringify({ ...manifest, data });
}

export async function configFlipPhase({ dir, setup, options, timeoutMs }: PhaseRun): Promise<PhaseResult> {
  const manifest = parse(
    await readFile(repoPath('manifests/components/injection-config/injection-config.yaml'), 'utf8'),
  ) as JsonObject;
  const volume = join(dir, 'config');
  await createKubeVolume(volume, { [FILE]: versioned(manifest, 0) });
  const session = await Session.open({
    dir,
    caFile: join(dir, 'certs/ca.crt'),
    ...setup,
    args: [...setup.args, '--self-signed-dir', join(dir, 'certs'), '--config-file', join(volume, FILE)],
  });
  const load = new NormalLoad(normalLoadSpec(session.target, timeoutMs, false));
  const probe = new Prober(session.target, timeoutMs);

  let expected = 'soak-0';
  let version = 0;
  const effect: number[] = [];
  const flips = new Tally();
  const problems = new Tally();
  const deadline = performance.now() + options.flips * (EFFECT_TIMEOUT_MS + INVALID_WATCH_MS);
  let done = 0;
  for (let i = 0; i < options.flips && session.server.alive && performance.now() < deadline; i += 1) {
    const kind = CYCLE[i % CYCLE.length] as FlipKind;
    flips.add(kind);
    const flippedAt = performance.now();
    if (kind === 'invalid') {
      const make = INVALID_FILES[Math.floor(i / CYCLE.length) % INVALID_FILES.length] as (m: JsonObject) => string;
      await swapKubeVolume(volume, { [FILE]: make(manifest) });
      while (performance.now() - flippedAt < INVALID_WATCH_MS) {
        const seen = await probe.version();
        if (seen !== undefined && seen !== expected)
          problems.add(`after an invalid file, answers showed ${seen} instead of ${expected}`);
        await sleep(POLL_MS * 2);
      }
    } else {
      if (kind === 'valid') {
        version += 1;
        expected = `soak-${version}`;
        await swapKubeVolume(volume, { [FILE]: versioned(manifest, version) });
      } else {
        expected = 'none';
        await swapKubeVolume(volume, {});
      }
      let effective = false;
      while (performance.now() - flippedAt < EFFECT_TIMEOUT_MS) {
        if ((await probe.version()) === expected) {
          effective = true;
          break;
        }
        await sleep(POLL_MS);
      }
      if (effective) effect.push(performance.now() - flippedAt);
      else problems.add(`a ${kind} flip not in effect after ${EFFECT_TIMEOUT_MS / 1000} s`);
    }
    done += 1;
  }
  const report = await load.stop();
  probe.close();
  effect.sort((a, b) => a - b);

  const mixed = report.mixed + probe.mixed;
  const failed = report.failed.reduce((sum, [, n]) => sum + n, 0) + probe.failed.total;
  const lost = report.lost.reduce((sum, [, n]) => sum + n, 0) + probe.lost.total;
  const versions = new Tally();
  versions.merge({ counts: report.versions });
  const notes = [
    `${done} flips (${flips.summary()}); ${version} valid versions written`,
    `changes in effect after p50 ${median(effect).toFixed(0)} ms, max ${(effect[effect.length - 1] ?? 0).toFixed(0)} ms`,
    `answers mixing two configs: ${mixed} (normal admissions and probes); answers by version: ${versions.counts.size} versions seen`,
    ...describeLoad(report),
  ];
  if (probe.failed.total + probe.lost.total > 0)
    notes.push(`probes: failed ${probe.failed.summary()}; lost ${probe.lost.summary()}`);
  if (problems.total > 0) notes.push(`problems: ${problems.summary()}`);
  const broken: string[] = [];
  if (mixed > 0) broken.push(`config flips: ${mixed} answers mixed two configs`);
  if (problems.total > 0) broken.push(`config flips: ${problems.summary(3)}`);
  return session.close('config-flips', {
    tried: report.tried + probe.tried,
    failed,
    lost,
    fives: report.fives + probe.fives,
    normalLost: failed + lost,
    completed: done >= options.flips,
    notes,
    broken,
  });
}

/** Admissions sent by the phase itself to see which config version the server answers with. */
class Prober {
  readonly failed = new Tally();
  readonly lost = new Tally();
  tried = 0;
  mixed = 0;
  fives = 0;
  private readonly agent: Agent;
  private readonly review = exampleReview();

  constructor(
    private readonly target: Target,
    private readonly timeoutMs: number,
  ) {
    this.agent = keepAliveAgent(target);
  }

  async version(): Promise<string | undefined> {
    this.tried += 1;
    const body = reviewText(this.review, `probe-${this.tried}`);
    const outcome = await exchange(
      this.target,
      this.agent,
      { method: 'POST', path: '/mutate', headers: { 'content-type': 'application/json' }, body },
      this.timeoutMs,
    );
    if (outcome.kind === 'error') {
      this.lost.add(outcome.error);
      return undefined;
    }
    if (outcome.status !== 200) {
      if (outcome.status >= 500) this.fives += 1;
      this.failed.add(String(outcome.status));
      return undefined;
    }
    const verdict = checkReviewAnswer(body, outcome.body);
    if ('deep' in verdict || !verdict.ok) {
      this.failed.add('deep' in verdict ? 'too deep' : verdict.reason);
      return undefined;
    }
    if (verdict.versions.length > 1) this.mixed += 1;
    return verdict.versions.length === 0 ? 'none' : verdict.versions.join('+');
  }

  close(): void {
    this.agent.destroy();
  }
}
