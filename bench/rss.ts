/**
 * The webhook's memory under the bench's load, without the rest of `npm run bench`: the injecting target
 * only, at peak (autocannon, BENCH_CONNECTIONS keep-alive connections), once per NODE_OPTIONS given, so the
 * heap flags can be compared on one machine in one run. docs/benchmark.md ("Latest figures") records its figures.
 *
 *   npm run bench:webhook-memory -- ['--max-old-space-size=192 --max-semi-space-size=4' ''...]
 *
 * With no argument it runs with the Deployment's NODE_OPTIONS and with none. RSS is sampled from /proc every
 * 250 ms; the peak is VmHWM, which also catches what falls between samples.
 */
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { peak } from './load.js';
import { knob } from '../harness/knobs.js';
import { memoryMiB } from '../harness/proc.js';
import { repoPath } from '../harness/repo.js';
import { freePort } from '../harness/serve.js';
import { stop, waitReady, webhookArgs, writeWebhookConfig } from './procs.js';
import { DEFAULT_SHAPES, parseShapes, shapeName, shapeReviews } from './reviews.js';

const SECONDS = knob('BENCH_SECONDS', 20);
const WARMUP = knob('BENCH_WARMUP', 5);
const CONNECTIONS = knob('BENCH_CONNECTIONS', 16, 'positive integer');
const SHAPES = parseShapes(process.env.BENCH_REVIEWS ?? DEFAULT_SHAPES);

async function deploymentNodeOptions(): Promise<string> {
  const manifest = await readFile(repoPath('manifests/base/deployment.yaml'), 'utf8');
  const value = /name: NODE_OPTIONS\s+value: (.*)/.exec(manifest)?.[1];
  if (value === undefined) throw new Error('no NODE_OPTIONS in manifests/base/deployment.yaml');
  return value.trim();
}

async function run(nodeOptions: string, work: string, configFile: string): Promise<string> {
  const port = await freePort();
  const certs = join(work, `certs-${port}`);
  const child = spawn(process.execPath, webhookArgs(port, configFile, certs), {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, NODE_OPTIONS: nodeOptions },
  });
  const pid = child.pid ?? 0;
  try {
    const ca = await waitReady(port, join(certs, 'ca.crt'), child);
    const idle = await memoryMiB(pid);
    const rss: number[] = [];
    const sampler = setInterval(
      () =>
        void memoryMiB(pid).then(
          (m) => rss.push(m.rss),
          () => undefined,
        ),
      250,
    );
    const parts: string[] = [];
    for (const shape of SHAPES) {
      const body = shapeReviews(shape).injecting;
      await peak({ port, body, ca, connections: CONNECTIONS }, WARMUP);
      const result = await peak({ port, body, ca, connections: CONNECTIONS }, SECONDS);
      parts.push(
        `${shapeName(shape)}: ${result.admissionsPerSecond.toFixed(0)}/s, p99 ${result.latency.p99.toFixed(1)} ms, ${result.errors} errors`,
      );
    }
    clearInterval(sampler);
    const end = await memoryMiB(pid);
    const sorted = rss.sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    return (
      `NODE_OPTIONS=${JSON.stringify(nodeOptions)}: idle ${idle.rss.toFixed(0)} MiB, under load median ${median.toFixed(0)} MiB, ` +
      `peak (VmHWM) ${end.peak.toFixed(0)} MiB; ${parts.join('; ')}; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`
    );
  } finally {
    await stop(child);
  }
}

const work = await mkdtemp(join(tmpdir(), 'si-bench-rss-'));
try {
  const configFile = await writeWebhookConfig(work);
  const variants = process.argv.length > 2 ? process.argv.slice(2) : [await deploymentNodeOptions(), ''];
  process.stdout.write(
    `bench rss: Node ${process.version}, ${CONNECTIONS} connections, ${WARMUP} s warm-up and ${SECONDS} s per review shape; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  for (const nodeOptions of variants) process.stdout.write(`${await run(nodeOptions, work, configFile)}\n`);
} finally {
  await rm(work, { recursive: true, force: true });
}
