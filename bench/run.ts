/**
 * `npm run bench`: the built webhook (one process, as `npm start` runs it) against a bare Fastify HTTPS
 * server that only parses the review, side by side in one run, over HTTPS keep-alive with autocannon.
 *
 *   (baseline) bare Fastify, parse and answer "allowed"
 *   (a)        webhook, realistic ~20 KB review injecting agent-runtime + csi with policy Auto
 *   (b)        webhook, same-size review that injects nothing
 *
 * Each target gets a warm-up; then BENCH_ROUNDS rounds measure the three in turn, so a change in background
 * load hits all of them alike, and the median round is reported. Besides throughput, the server's own CPU
 * time per admission is reported: unlike admissions/s it does not depend on whether the load generator,
 * which shares the machine, is the bottleneck. BENCH_DURATION (s per run), BENCH_ROUNDS and
 * BENCH_CONNECTIONS tune it. Linux only: RSS and CPU come from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { benchReviews } from './reviews.js';

// Compiled to dist/bench/run.js (dist/ is outside lint and git); the package root is two levels up.
const ROOT = new URL('../../', import.meta.url).pathname;
const MAIN = join(ROOT, 'dist/cli/main.js');
const BASELINE = new URL('./baseline-server.js', import.meta.url).pathname;
const CONFIG_CASE = join(ROOT, 'test/fixtures/conformance/01-agent-runtime-basic.json');

const DURATION = Number(process.env.BENCH_DURATION ?? '10');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '3');
const WARMUP = 5;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? '10');
const CLOCK_TICKS = 100; // USER_HZ on Linux

interface Target {
  label: string;
  port: number;
  pid: number;
  body: string;
}

interface Measurement {
  label: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  rssMiB: number;
  cpuPercent: number;
  cpuMsPerAdmission: number;
  errors: number;
  non2xx: number;
  total: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function post(port: number, ca: Buffer, body: string, path = '/mutate'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: body === '' ? 'GET' : 'POST', ca, servername: 'localhost', agent: false,
        headers: body === '' ? {} : { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body === '' ? undefined : body);
  });
}

async function waitReady(port: number, caFile: string, child: ChildProcess): Promise<Buffer> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`process ${child.pid ?? '?'} exited with ${child.exitCode}`);
    try {
      const ca = await readFile(caFile);
      if ((await post(port, ca, '', '/readyz')).status === 200) return ca;
    } catch {
      // not up yet
    }
    await sleep(100);
  }
  throw new Error(`port ${port} not ready after 30 s`);
}

function procStatus(pid: number): Promise<{ rssKiB: number; cpuTicks: number }> {
  return Promise.all([readFile(`/proc/${pid}/status`, 'utf8'), readFile(`/proc/${pid}/stat`, 'utf8')]).then(
    ([status, stat]) => {
      const rss = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // After "pid (comm) ", utime and stime are the 12th and 13th fields.
      return { rssKiB: Number(rss), cpuTicks: Number(fields[11]) + Number(fields[12]) };
    },
  );
}

function loadOptions(target: Target, ca: Buffer): Parameters<typeof autocannon>[0] {
  return {
    url: `https://127.0.0.1:${target.port}/mutate`,
    connections: CONNECTIONS,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: target.body,
    tlsOptions: { ca },
    servername: 'localhost',
  };
}

async function measure(target: Target, ca: Buffer): Promise<Measurement> {
  const options = loadOptions(target, ca);
  const before = await procStatus(target.pid);
  const result = await autocannon({ ...options, duration: DURATION });
  const after = await procStatus(target.pid);
  return {
    label: target.label,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rssMiB: after.rssKiB / 1024,
    cpuPercent: ((after.cpuTicks - before.cpuTicks) / CLOCK_TICKS / result.duration) * 100,
    cpuMsPerAdmission: ((after.cpuTicks - before.cpuTicks) * (1000 / CLOCK_TICKS)) / result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}

function startProcess(args: string[], stdout: 'ignore' | 'pipe'): ChildProcess {
  return spawn(process.execPath, args, { stdio: ['ignore', stdout, 'inherit'] });
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'si-bench-'));
  const children: ChildProcess[] = [];
  try {
    const configCase = JSON.parse(await readFile(CONFIG_CASE, 'utf8')) as { configMap: unknown };
    await writeFile(join(work, 'config.json'), JSON.stringify(configCase.configMap));
    const reviews = benchReviews();

    // The webhook as `npm start` runs it; its admission log lines go to /dev/null, as cheap as a pipe.
    const serverPort = await freePort();
    const server = startProcess(
      [MAIN, 'serve', '--host', '127.0.0.1', '--port', String(serverPort), '--metrics-port', '0',
        '--config-file', join(work, 'config.json'), '--self-signed-dir', join(work, 'certs')],
      'ignore',
    );
    children.push(server);
    const ca = await waitReady(serverPort, join(work, 'certs/ca.crt'), server);

    const baselinePort = await freePort();
    const baseline = startProcess(
      [BASELINE, '--port', String(baselinePort), '--cert', join(work, 'certs/tls.crt'), '--key', join(work, 'certs/tls.key')],
      'ignore',
    );
    children.push(baseline);
    await waitReady(baselinePort, join(work, 'certs/ca.crt'), baseline);

    const injected = JSON.parse((await post(serverPort, ca, reviews.injecting)).text) as { response: { patch?: string } };
    const untouched = JSON.parse((await post(serverPort, ca, reviews.unchanged)).text) as { response: { patch?: string } };
    if (injected.response.patch === undefined || untouched.response.patch !== undefined) {
      throw new Error('bench reviews do not behave as intended: (a) must inject, (b) must not');
    }

    const targets: Target[] = [
      { label: 'baseline: bare Fastify, parse only', port: baselinePort, pid: baseline.pid ?? 0, body: reviews.injecting },
      { label: '(a) webhook, injecting', port: serverPort, pid: server.pid ?? 0, body: reviews.injecting },
      { label: '(b) webhook, nothing to inject', port: serverPort, pid: server.pid ?? 0, body: reviews.unchanged },
    ];
    const loadBefore = loadavg()[0] ?? 0;
    for (const target of targets) {
      process.stderr.write(`warming up ${target.label} (${WARMUP} s)\n`);
      await autocannon({ ...loadOptions(target, ca), duration: WARMUP });
    }
    const rounds: Measurement[][] = targets.map(() => []);
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const [i, target] of targets.entries()) {
        process.stderr.write(`round ${round}/${ROUNDS}: ${target.label} (${DURATION} s)\n`);
        rounds[i]?.push(await measure(target, ca));
      }
    }
    const results = rounds.map(median);
    report(results, reviews, Buffer.from(injected.response.patch, 'base64').length, [loadBefore, loadavg()[0] ?? 0]);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await rm(work, { recursive: true, force: true });
  }
}

/** The round with the median throughput, whole, so its latencies and CPU belong to the same run. */
function median(measurements: Measurement[]): Measurement {
  const sorted = [...measurements].sort((x, y) => x.requestsPerSecond - y.requestsPerSecond);
  const middle = sorted[Math.floor(sorted.length / 2)];
  if (middle === undefined) throw new Error('no measurements');
  return middle;
}

function report(
  results: Measurement[],
  reviews: { injecting: string; unchanged: string },
  patchBytes: number,
  load: [number, number],
): void {
  const [base, a, b] = results;
  if (base === undefined || a === undefined || b === undefined) throw new Error('missing measurements');
  const cpu = cpus();
  const lines = [
    `machine: ${cpu.length} x ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Linux ${release()}, Node ${process.version}`,
    `load: autocannon in the same machine, ${CONNECTIONS} keep-alive HTTPS connections; median of ${ROUNDS} rounds of ${DURATION} s per target`,
    `1-minute load average before/after: ${load[0].toFixed(2)} / ${load[1].toFixed(2)} (above the CPU count, figures are noisy)`,
    `bodies: (a) ${reviews.injecting.length} B, (b) ${reviews.unchanged.length} B; (a) patch ${patchBytes} B decoded`,
    '',
    '| target | admissions/s | p50 ms | p99 ms | server CPU | server CPU ms/admission | RSS MiB | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...results.map(
      (r) =>
        `| ${r.label} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.cpuPercent.toFixed(0)}% | ${r.cpuMsPerAdmission.toFixed(3)} | ${r.rssMiB.toFixed(0)} | ${r.errors + r.non2xx} |`,
    ),
    '',
    `(a) / baseline, admissions/s: ${ratio(a.requestsPerSecond, base.requestsPerSecond)}   (target >= 0.85x)`,
    `(a) / (b), admissions/s:      ${ratio(a.requestsPerSecond, b.requestsPerSecond)}`,
    `baseline / (a), CPU per admission: ${ratio(base.cpuMsPerAdmission, a.cpuMsPerAdmission)}   (the same ratio with the load generator out of the picture)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

function ratio(x: number, y: number): string {
  return `${(x / y).toFixed(2)}x`;
}

await main();
