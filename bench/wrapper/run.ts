/**
 * The wrapper benchmark (part of `npm run bench`; alone: `npm run bench:wrapper`): run_with_envs.sh under real
 * bash, in the ways it can wait (ways.ts), side by side; the idle cost is measured in idle.ts. Method and
 * figures: docs/benchmark.md, "Method".
 *
 *   idle cost     WRAPPER_BENCH_COUNT (50) wrappers waiting for WRAPPER_BENCH_SECONDS (30): their CPU from
 *                 /proc/PID/stat (user + system, with the children they reaped), and the processes started,
 *                 counted as PIDs allocated in a PID namespace of their own (unshare), else system-wide;
 *   wake latency  WRAPPER_BENCH_WAKES (100) rounds per way: one waiting wrapper, .env_ready renamed into place
 *                 (and the wake byte written, for the FIFO), to the first output of the exec'd command;
 *                 for the shipped way, also the CPU of each wake: the woken wrapper and its command, counted in a
 *                 cgroup (bench/cpu-group.ts), beside bash's own fork and exec of the same command;
 *   probe cost    WRAPPER_BENCH_PROBES (200) unclaimed exec probes in a row, CPU and time per probe, beside
 *                 bare bash starts;
 *   supervising   WRAPPER_BENCH_COUNT claimed wrappers, each the parent of its command and of its watch for the
 *                 claim's end, for WRAPPER_BENCH_SECONDS: the CPU of both (not the command's), and their memory
 *                 (PSS, so the pages the wrappers share are split among them).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { childrenOf, writeWake } from '../../test/wrapper/run-wrapper.js';
import { knob } from '../../harness/knobs.js';
import { statCpuMs } from '../../harness/proc.js';
import { quantile } from '../../harness/quantiles.js';
import { timesSeconds } from '../procs.js';
import { cpuGroup, type CpuGroup } from '../cpu-group.js';
import { canUnshare, idle, type Idle } from './idle.js';
import { inWait, WRAPPER, ways, type Way } from './ways.js';

const COUNT = knob('WRAPPER_BENCH_COUNT', 50, 'positive integer');
const SECONDS = knob('WRAPPER_BENCH_SECONDS', 30, 'positive integer');
const WAKES = knob('WRAPPER_BENCH_WAKES', 100, 'positive integer');
const PROBES = knob('WRAPPER_BENCH_PROBES', 200, 'positive integer');

const work = mkdtempSync(path.join(tmpdir(), 'si-bench-wrapper-'));

/**
 * One round: a fresh folder, one waiting wrapper, readiness, and the time to its command's first output; with
 * `group`, also the CPU seconds the wrapper and its command ran from readiness to their exit.
 */
async function wakeOnce(way: Way, group?: CpuGroup): Promise<{ ms: number; cpuSeconds?: number }> {
  const dir = mkdtempSync(path.join(work, 'wake-'));
  try {
    if (way.plainWakeFile) mkdirSync(path.join(dir, '.env_wake'));
    const child = spawn('bash', [way.script, '--', 'echo', 'started'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SANDBOX_ENV_DIR: dir },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const firstOutput = new Promise<number>((resolve) => child.stdout.once('data', () => resolve(performance.now())));
    const closed = new Promise((resolve) => child.on('close', resolve));
    group?.add(child.pid ?? -1);
    await inWait(way, child.pid ?? -1, dir);
    writeFileSync(path.join(dir, '.env_ready.tmp'), '');
    const cpuBefore = group?.seconds();
    const start = performance.now();
    renameSync(path.join(dir, '.env_ready.tmp'), path.join(dir, '.env_ready'));
    if (way.wake) await writeWake(dir);
    const end = await firstOutput;
    await closed;
    return {
      ms: end - start,
      ...(group === undefined || cpuBefore === undefined ? {} : { cpuSeconds: group.seconds() - cpuBefore }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Per probe: CPU (the harness's children, from bash's `times`) and wall time, over PROBES in a row. */
function probes(command: string): { cpuMs: number; wallMs: number } {
  const dir = mkdtempSync(path.join(work, 'probe-'));
  try {
    const out = execFileSync(
      'bash',
      [
        '-c',
        `start=$EPOCHREALTIME; for ((i = 0; i < $1; i++)); do ${command}; done; end=$EPOCHREALTIME; echo "$start $end"; times`,
        'probes',
        String(PROBES),
      ],
      {
        encoding: 'utf8',
        // stdin not a socket (Node's pipes are): bash would take that for rshd and read ~/.bashrc.
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SANDBOX_ENV_DIR: dir, WRAPPER },
      },
    ).split('\n');
    const [start, end] = (out[0] ?? '').split(' ').map(Number);
    // `times`' second line: the children's user and system time.
    const [user, system] = (out[2] ?? '').split(' ').map(timesSeconds);
    return {
      cpuMs: (((user ?? Number.NaN) + (system ?? Number.NaN)) * 1000) / PROBES,
      wallMs: (((end ?? Number.NaN) - (start ?? Number.NaN)) * 1000) / PROBES,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** utime + stime of the process itself, in seconds: not its children's. */
function ownCpuSeconds(pid: number): number {
  return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8')) / 1000;
}

/** Proportional set size, in KiB: the process's private pages and its share of the shared ones. */
function pssKiB(pid: number): number {
  const match = /^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return Number(match?.[1] ?? 0);
}

/** COUNT claimed wrappers supervising `sleep`: what the wrapper and its watch cost while the command runs. */
async function supervising(): Promise<{ cpuSeconds: number; coreShare: number; pssKiBEach: number }> {
  const dir = mkdtempSync(path.join(work, 'claimed-'));
  writeFileSync(path.join(dir, 'env.sh'), '');
  writeFileSync(path.join(dir, '.env_ready'), '');
  const wrappers = Array.from({ length: COUNT }, () =>
    spawn('bash', [WRAPPER, '--', 'sleep', '100000'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SANDBOX_ENV_DIR: dir },
      stdio: 'ignore',
    }),
  );
  try {
    // Each wrapper's two children: the command (sleep) and the watch (a bash like the wrapper).
    const watched: number[] = [];
    for (const wrapper of wrappers) {
      const pid = wrapper.pid ?? -1;
      const deadline = Date.now() + 60_000;
      for (;;) {
        const kids = await childrenOf(pid);
        const watch = kids.find((kid) => readFileSync(`/proc/${kid}/cmdline`, 'utf8').startsWith('bash\0'));
        if (kids.length >= 2 && watch !== undefined) {
          watched.push(pid, watch);
          break;
        }
        if (Date.now() > deadline) throw new Error(`wrapper ${pid} never started its command and its watch`);
        await sleep(10);
      }
    }
    const before = watched.reduce((sum, pid) => sum + ownCpuSeconds(pid), 0);
    const started = performance.now();
    await sleep(SECONDS * 1000);
    const cpuSeconds = watched.reduce((sum, pid) => sum + ownCpuSeconds(pid), 0) - before;
    const elapsed = (performance.now() - started) / 1000;
    const pss = watched.reduce((sum, pid) => sum + pssKiB(pid), 0);
    return { cpuSeconds, coreShare: cpuSeconds / elapsed, pssKiBEach: pss / COUNT };
  } finally {
    for (const wrapper of wrappers) wrapper.kill('SIGTERM');
    await Promise.all(
      wrappers.map((wrapper) =>
        wrapper.exitCode !== null ? Promise.resolve() : new Promise((resolve) => wrapper.once('exit', resolve)),
      ),
    );
  }
}

async function main(): Promise<void> {
  const list = ways(work);
  const isolated = await canUnshare();
  process.stdout.write(
    `run_with_envs.sh: ${COUNT} waiting wrappers for ${SECONDS} s, per way of waiting ` +
      `(processes counted ${isolated ? 'in a PID namespace of their own' : 'system-wide: no PID namespace here'})\n`,
  );
  const idles: Idle[] = [];
  for (const way of list) {
    const result = await idle(way, isolated, COUNT, SECONDS, work);
    idles.push(result);
    process.stdout.write(
      `  ${way.name.padEnd(24)} CPU ${result.cpuSeconds.toFixed(2)} s (${(result.coreShare * 100).toFixed(2)}% of a core), ` +
        `${result.processesStarted} processes started\n`,
    );
  }

  process.stdout.write(`wake: .env_ready renamed into place -> the command's first output, ${WAKES} rounds each\n`);
  const wakeable = list.filter((way) => way.reference !== true);
  const wakes = new Map<string, number[]>(wakeable.map((way) => [way.name, []]));
  // What a claim costs the node, for the shipped way: the woken wrapper and its command, exec'd and exited.
  const group = cpuGroup('si-bench-wake');
  const counted = 'unavailable' in group ? undefined : group;
  const wakeCpu: number[] = [];
  // Interleaved, so a change in background load hits every way alike.
  for (let round = 0; round < WAKES; round += 1) {
    for (const [i, way] of wakeable.entries()) {
      const woken = await wakeOnce(way, i === 0 ? counted : undefined);
      wakes.get(way.name)?.push(woken.ms);
      if (woken.cpuSeconds !== undefined) wakeCpu.push(woken.cpuSeconds * 1000);
    }
  }
  counted?.remove();
  const wakeResults = wakeable.map((way) => {
    const sorted = (wakes.get(way.name) ?? []).sort((a, b) => a - b);
    return { way: way.name, p50Ms: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99), maxMs: sorted.at(-1) };
  });
  for (const r of wakeResults) {
    process.stdout.write(
      `  ${r.way.padEnd(24)} p50 ${r.p50Ms.toFixed(1)} ms   p99 ${r.p99Ms.toFixed(1)} ms   max ${r.maxMs?.toFixed(1)} ms\n`,
    );
  }

  // The program `exec echo` finds on PATH, not bash's builtin echo, which would start no process.
  const forkExecMs = (): number =>
    probes(`${execFileSync('bash', ['-c', 'type -P echo'], { encoding: 'utf8' }).trim()} started >/dev/null`).cpuMs;
  const sortedCpu = wakeCpu.sort((a, b) => a - b);
  const wakeCpuResult =
    'unavailable' in group
      ? { unmeasured: group.unavailable }
      : { p50Ms: quantile(sortedCpu, 0.5), p99Ms: quantile(sortedCpu, 0.99), forkExecMs: forkExecMs() };
  process.stdout.write(
    'unmeasured' in wakeCpuResult
      ? `  CPU of a wake (${wakeable[0]?.name}): not measured, ${wakeCpuResult.unmeasured}\n`
      : `  CPU of a wake (${wakeable[0]?.name}), the wrapper woken and its command exec'd: p50 ${wakeCpuResult.p50Ms.toFixed(2)} ms, ` +
          `p99 ${wakeCpuResult.p99Ms.toFixed(2)} ms; bash forking and exec'ing the same command: ${wakeCpuResult.forkExecMs.toFixed(2)} ms\n`,
  );
  const probe = probes('bash "$WRAPPER" --probe -- true');
  const bare = probes('bash -c :');
  process.stdout.write(
    `probe while unclaimed (${PROBES} in a row): ${probe.cpuMs.toFixed(2)} ms CPU, ${probe.wallMs.toFixed(2)} ms each; ` +
      `a bare bash start: ${bare.cpuMs.toFixed(2)} ms CPU, ${bare.wallMs.toFixed(2)} ms\n`,
  );
  const supervised = await supervising();
  process.stdout.write(
    `supervising (${COUNT} claimed wrappers for ${SECONDS} s, each with its watch): CPU ${supervised.cpuSeconds.toFixed(2)} s ` +
      `(${(supervised.coreShare * 100).toFixed(3)}% of a core), ${supervised.pssKiBEach.toFixed(0)} KiB PSS per sandbox\n`,
  );
  const chosen = wakeResults[0];
  const result = {
    count: COUNT,
    seconds: SECONDS,
    idle: idles,
    wake: wakeResults,
    wakeCpu: wakeCpuResult,
    probe: { wrapper: probe, bareBash: bare },
    supervising: supervised,
    wakeTargetMet: chosen !== undefined && chosen.p99Ms <= 20,
  };
  process.stdout.write(`  wake target (p99 <= 20 ms, FIFO + wake): ${result.wakeTargetMet ? 'met' : 'NOT met'}\n`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

try {
  await main();
} finally {
  rmSync(work, { recursive: true, force: true });
}
