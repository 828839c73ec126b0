/**
 * `npm run soak`: the built webhook against hostile and careless clients, phase by phase, each against a
 * fresh `serve` process so its memory and descriptors are its own. Prints tried / failed / lost per phase,
 * RSS and open descriptors over time, and, last, whether every bound held; exits 1 if one did not.
 * Not part of `npm test`: the full run takes about half an hour. docs/reliability.md records one.
 */
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { git, repoPath } from '../harness/repo.js';
import { configFlipPhase } from './config-flips.js';
import { drainPhase, shutdownDelayArgs } from './drain.js';
import { fuzzPhase } from './fuzz-phase.js';
import { readOptions, type PhaseName, type SoakOptions } from './options.js';
import { bounds, limitsOf, type Limits } from './bounds.js';
import { readDeployment, type Deployment } from './manifests.js';
import { rotationPhase } from './rotation.js';
import { readServeHelp, ServeProcess, shortTimeLimits, type Sample, type ServeSetup } from './server.js';
import { Session, type PhaseResult, type PhaseRun } from './session.js';
import { slowClientPhase, type SlowMode } from './slow-clients.js';

/** serve's flags: the Deployment's limits this build has, short time limits over them, then SOAK_SERVE_ARGS. */
function serveSetup(deployment: Deployment, short: Map<string, string>, options: SoakOptions): ServeSetup {
  const values = new Map([...deployment.limits, ...short]);
  const probe = `--import=${new URL('./loop-probe.js', import.meta.url).pathname}`;
  const chosen = options.nodeOptions ?? deployment.nodeOptions;
  const nodeOptions = options.loopProbe ? [chosen, probe].filter((o) => o !== undefined && o !== '').join(' ') : chosen;
  return {
    args: [...[...values].flatMap(([flag, value]) => [`--${flag}`, value]), ...options.extraServeArgs],
    logLevel: options.logLevel,
    env: {
      ...(nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions }),
      ...(options.loopProbe ? { SOAK_LOOP_PROBE_ACTIVE: '1' } : {}),
    },
  };
}

function header(options: SoakOptions, setup: ServeSetup, notes: string[], limits: Limits): string[] {
  const cpu = cpus();
  const dirty = (git('status', '--porcelain', '--', 'src') ?? '').split('\n').filter((line) => line !== '');
  return [
    `soak: ${new Date().toISOString()}`,
    `machine: nproc ${availableParallelism()}, ${cpu.length} x ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Linux ${release()}, Node ${process.version}, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    `commit: ${git('log', '--oneline', '-1') ?? 'not a git checkout'}${dirty.length === 0 ? '' : ` + uncommitted changes in ${dirty.length} src files (${dirty.map((l) => l.slice(3)).join(', ')})`}`,
    `phases: ${options.phases.join(', ')}; seed ${options.seed}`,
    `serve: ${setup.args.length === 0 ? 'no flags added' : setup.args.join(' ')}${Object.entries(setup.env)
      .map(([k, v]) => `, ${k}=${v}`)
      .join(
        '',
      )} (the Deployment's limits this build has, short time limits over them${notes.length === 0 ? '' : `; ${notes.join('; ')}`})`,
    `limits: RSS < ${limits.rssMiB} MiB (${limits.rssSource}); normal admissions time out after ${limits.admissionTimeoutMs} ms (${limits.timeoutSource}); connection cap ${limits.cap} (${limits.capSource})`,
  ];
}

function series(samples: readonly Sample[], pick: (s: Sample) => number, points = 12): string {
  if (samples.length === 0) return 'no samples';
  const step = Math.max(1, Math.floor(samples.length / points));
  const shown = samples.filter((_, i) => i % step === 0 || i === samples.length - 1);
  return shown.map((s) => `${pick(s).toFixed(0)}@${s.t.toFixed(0)}s`).join(' ');
}

function describePhase(result: PhaseResult): string[] {
  const rss = result.samples.map((s) => s.rssMiB);
  const fds = result.samples.map((s) => s.fds);
  const range = (values: number[]): string =>
    values.length === 0 ? 'min - max -' : `min ${Math.min(...values).toFixed(0)} max ${Math.max(...values).toFixed(0)}`;
  return [
    `== ${result.name}: tried ${result.tried}, failed ${result.failed}, lost ${result.lost} (${result.seconds.toFixed(0)} s)`,
    `   RSS MiB ${range(rss)}, peak (VmHWM) ${result.hwmMiB.toFixed(0)}; over time: ${series(result.samples, (s) => s.rssMiB)}`,
    `   open fds ${range(fds)}, at rest ${result.baselineFds} before and ${result.settledFds ?? '-'} after; over time: ${series(result.samples, (s) => s.fds)}`,
    ...result.notes.map((line) => `   ${line}`),
    ...result.crashes.map((line) => `   CRASH: ${line}`),
  ];
}

/** Normal admissions on fresh connections, p99 before and during a slow-client attack (other phases have none). */
function tailCell(result: PhaseResult): string {
  if (result.tail === undefined) return '-';
  return `${result.tail.quiet.fresh.p99.toFixed(0)} / ${result.tail.attack.fresh.p99.toFixed(0)}`;
}

function failedToRun(name: string, error: unknown): PhaseResult {
  const message = error instanceof Error ? error.message : String(error);
  return {
    name,
    tried: 0,
    failed: 0,
    lost: 0,
    seconds: 0,
    samples: [],
    hwmMiB: 0,
    baselineFds: 0,
    settledFds: undefined,
    crashes: [],
    fives: 0,
    normalLost: 0,
    completed: false,
    notes: [],
    broken: [`${name} could not run: ${message.slice(0, 300)}`],
  };
}

async function main(): Promise<number> {
  const options = readOptions();
  const help = await readServeHelp();
  const time = options.shortLimits
    ? shortTimeLimits(help)
    : { values: new Map<string, string>(), notes: ['SOAK_SHORT_LIMITS=0'] };
  const deployment = await readDeployment(help);
  const setup = serveSetup(deployment, time.values, options);
  const limits = limitsOf(deployment, help, options);
  const work = await mkdtemp(join(tmpdir(), 'si-soak-'));
  const started = performance.now();
  const out = (lines: string[]): boolean => process.stdout.write(`${lines.join('\n')}\n`);
  out(header(options, setup, time.notes, limits));

  const configFile = join(work, 'config', 'injection-config.yaml');
  await mkdir(join(work, 'config'));
  await copyFile(repoPath('manifests/components/injection-config/injection-config.yaml'), configFile);
  const withConfig: ServeSetup = { ...setup, args: [...setup.args, '--config-file', configFile] };
  const phase = (dir: string, serve: ServeSetup): PhaseRun => ({
    dir,
    setup: serve,
    options,
    timeoutMs: limits.admissionTimeoutMs,
  });
  const plainSession = (dir: string): Promise<Session> =>
    Session.open({
      dir,
      caFile: join(dir, 'certs/ca.crt'),
      ...withConfig,
      args: [...withConfig.args, '--self-signed-dir', join(dir, 'certs')],
    });

  const slowClients =
    (mode: SlowMode) =>
    async (dir: string): Promise<PhaseResult> =>
      slowClientPhase(mode, await plainSession(dir), phase(dir, withConfig));

  const run: Record<PhaseName, (dir: string) => Promise<PhaseResult>> = {
    fuzz: async (dir) => fuzzPhase(await plainSession(dir), options, work),
    'never-read': slowClients('never-read'),
    'stalled-body': slowClients('stalled-body'),
    'byte-at-a-time': slowClients('byte-at-a-time'),
    slowloris: slowClients('slowloris'),
    rotation: (dir) => rotationPhase(phase(dir, withConfig)),
    'config-flips': (dir) => configFlipPhase(phase(dir, setup)),
    drain: (dir) => drainPhase(phase(dir, withConfig), shutdownDelayArgs(help)),
  };

  const results: PhaseResult[] = [];
  try {
    for (const name of options.phases) {
      process.stderr.write(`soak: ${name}\n`);
      let result: PhaseResult;
      try {
        result = await run[name](join(work, name));
      } catch (error) {
        result = failedToRun(name, error);
      } finally {
        ServeProcess.killAll();
      }
      results.push(result);
      out(['', ...describePhase(result)]);
    }
  } finally {
    ServeProcess.killAll();
    if (process.env.SOAK_KEEP === undefined) await rm(work, { recursive: true, force: true });
  }

  const table = [
    '',
    '| phase | tried | failed | lost | peak RSS MiB | max open fds | fresh p99 ms, quiet / attacked | seconds |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.tried} | ${r.failed} | ${r.lost} | ${r.hwmMiB.toFixed(0)} | ${Math.max(0, ...r.samples.map((s) => s.fds))} | ${tailCell(r)} | ${r.seconds.toFixed(0)} |`,
    ),
  ];
  const checked = bounds(results, limits);
  const broken = checked.filter((b) => b.broken.length > 0);
  out([
    ...table,
    '',
    ...checked.map(
      (b) =>
        `${b.broken.length === 0 ? 'held  ' : 'BROKEN'} ${b.name}${b.broken.length === 0 ? '' : `: ${b.broken.join('; ')}`}`,
    ),
    '',
    `took ${((performance.now() - started) / 60_000).toFixed(1)} min; load average at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    broken.length === 0
      ? 'soak: all bounds held'
      : `soak: ${broken.length} bounds broken: ${broken.map((b) => b.name).join('; ')}`,
  ]);
  return broken.length === 0 ? 0 : 1;
}

// Interrupted, the harness takes its servers with it; the temp directory stays, for a look.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    ServeProcess.killAll();
    process.exit(130);
  });
}
const code = await main();
process.exitCode = code;
// Everything the phases opened is closed; should a handle linger anyway, the run still ends.
setTimeout(() => process.exit(code), 5_000).unref();
