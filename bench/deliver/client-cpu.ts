/**
 * The envd client's own CPU per delivery (part of `npm run bench`; alone: `npm run bench:deliver-client`). The
 * product's envdFiles sends what a first delivery sends (deliver-claim.ts: the listing, both temporary files in
 * one upload, the two Moves, the wake) to ENVD_CLIENT_RUNTIMES (200) envd doubles (test/support/envd-double.ts)
 * that another process serves, 32 at once as the work queue runs them. The figure is this process's CPU over
 * a round of deliveries, divided by them: the client's alone, without the doubles, kube-apiserver or the
 * wrappers, which the burst of the delivery benchmark (run.ts) mixes it with on the same two cores. Each
 * round goes to every runtime once, on a new connection each, as each delivery is to another pod;
 * ENVD_CLIENT_ROUNDS (10) rounds of each way, plain HTTP and HTTPS through the runtime TLS agent, taken in
 * turn, so that a change in the machine's speed hits both alike. Method and figures: docs/benchmark.md.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, constants } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { envdFiles, type EnvdFiles } from '../../src/deliver/envd/envd-files.js';
import type { LeaderTerm } from '../../src/deliver/leadership/leader-election.js';
import { deliverySteps, envPaths, wakeStep } from '../../src/deliver/envd/plan.js';
import type { RuntimeEndpoint } from '../../src/deliver/envd/envd-files.js';
import { runtimeTlsAgent, tlsBundleFromSecretData } from '../../src/deliver/envd/runtime-tls.js';
import { randomHex } from '../../src/deliver/envd/random-hex.js';
import { startEnvdDouble, type EnvdDouble } from '../../test/support/envd-double.js';
import { runtimeTlsPki, runtimeTlsSecretData, type RuntimeTlsPki } from '../../test/support/runtime-tls-pki.js';
import { median } from '../../harness/quantiles.js';

const RUNTIMES = Number(process.env.ENVD_CLIENT_RUNTIMES ?? 200);
const ROUNDS = Number(process.env.ENVD_CLIENT_ROUNDS ?? 10);
/** The controller's default --concurrency. */
const AT_ONCE = 32;
const TOKEN = 'bench-token';
const paths = envPaths('/var/sandbox');
const guard: LeaderTerm = { signal: new AbortController().signal, fresh: () => true };
const content = `${Array.from({ length: 10 }, (_, i) => `export VAR_${i}='value ${i}'`).join('\n')}\n`;

interface Served {
  plain: number[];
  tls: number[];
}

/** The doubles' process: each double's folder has a FIFO held open for reading, as a waiting wrapper holds it. */
async function serveDoubles(pkiFile: string): Promise<void> {
  const pki = JSON.parse(readFileSync(pkiFile, 'utf8')) as RuntimeTlsPki;
  const dirs: string[] = [];
  const doubles: EnvdDouble[] = [];
  const start = async (tls: boolean): Promise<number> => {
    const dir = mkdtempSync(path.join(tmpdir(), 'si-bench-client-'));
    dirs.push(dir);
    execFileSync('mkfifo', [path.join(dir, '.env_wake')]);
    openSync(path.join(dir, '.env_wake'), constants.O_RDONLY | constants.O_NONBLOCK);
    const double = await startEnvdDouble({
      root: dir,
      token: TOKEN,
      halfWriteMs: 0,
      ...(tls ? { tls: { key: pki.server.keyPem, cert: pki.server.certPem, requestClientCert: false } } : {}),
    });
    doubles.push(double);
    return double.port;
  };
  const served: Served = { plain: [], tls: [] };
  for (let i = 0; i < RUNTIMES; i += 1) served.plain.push(await start(false));
  for (let i = 0; i < RUNTIMES; i += 1) served.tls.push(await start(true));
  process.stdout.write(`${JSON.stringify(served)}\n`);
  // Until the bench closes stdin; the FIFOs' bytes (one a delivery) stay far below a pipe's 64 KiB.
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.on('end', resolve));
  for (const double of doubles) await double.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

/** One first delivery, the requests deliverClaim sends for it. */
async function deliver(envd: EnvdFiles, endpoint: RuntimeEndpoint): Promise<void> {
  const entries = await envd.list(endpoint, paths.dir, guard);
  for (const step of deliverySteps(paths, { found: false }, content, 'sha256:bench\n', randomHex(8)))
    await envd.run(endpoint, step, guard);
  const wake = wakeStep(paths, entries);
  if (wake === undefined) throw new Error('the listing shows no wake FIFO');
  await envd.run(endpoint, wake, guard);
}

/** CPU ms of this process per delivery, over one round to every runtime. */
async function round(envd: EnvdFiles, endpoints: () => RuntimeEndpoint[]): Promise<number> {
  const all = endpoints();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let endpoint = all[next++]; endpoint !== undefined; endpoint = all[next++]) await deliver(envd, endpoint);
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / all.length;
}

function stats(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `median ${median(sorted).toFixed(3)}, min ${(sorted[0] ?? Number.NaN).toFixed(3)}, max ${(sorted.at(-1) ?? Number.NaN).toFixed(3)}`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'si-bench-client-pki-'));
  const pki = runtimeTlsPki();
  const pkiFile = path.join(dir, 'pki.json');
  writeFileSync(pkiFile, JSON.stringify(pki));
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--doubles', pkiFile], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const served = await new Promise<Served>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        if (out.includes('\n')) resolve(JSON.parse(out) as Served);
      });
      void exited.then((code) => reject(new Error(`the doubles' process exited (${code})`)));
    });
    const envd = envdFiles({ timeoutMs: 10_000, maxBodyBytes: 64 * 1024, user: 'root' });
    const tlsAgent = runtimeTlsAgent(
      tlsBundleFromSecretData(runtimeTlsSecretData(pki.ca.certPem), 'bench/runtime-tls'),
    );
    // New endpoint objects each round, as each delivery has its decision's own.
    const ways = {
      plain: () =>
        served.plain.map((port) => ({ url: `http://127.0.0.1:${port}`, tlsAgent: undefined, accessToken: TOKEN })),
      tls: () => served.tls.map((port) => ({ url: `https://127.0.0.1:${port}`, tlsAgent, accessToken: TOKEN })),
    };
    const figures: Record<keyof typeof ways, number[]> = { plain: [], tls: [] };
    for (const way of ['plain', 'tls'] as const) await round(envd, ways[way]); // warm-up
    for (let i = 0; i < ROUNDS; i += 1)
      for (const way of ['plain', 'tls'] as const) figures[way].push(await round(envd, ways[way]));
    tlsAgent.destroy();
    process.stdout.write(
      `deliver-env's envd client alone: CPU ms per first delivery (5 requests, a new connection each; ${RUNTIMES} runtimes, ${AT_ONCE} at once, ${ROUNDS} rounds)\n` +
        `  plain HTTP: ${stats(figures.plain)}\n` +
        `  HTTPS, the runtime TLS agent: ${stats(figures.tls)}\n`,
    );
    process.stdout.write(
      `${JSON.stringify({ envdClientCpuMsPerDelivery: { plain: figures.plain, tls: figures.tls } })}\n`,
    );
  } finally {
    child.stdin.end();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--doubles') await serveDoubles(process.argv[3] ?? '');
else await main();
