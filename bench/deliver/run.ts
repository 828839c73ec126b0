/**
 * The delivery benchmark (part of `npm run bench`; alone: `npm run bench:deliver`): a real kube-apiserver, the
 * built `deliver-env` as its own process, and DELIVER_BENCH_SANDBOXES (200) Sandboxes with wrapped pods, each
 * with its own loopback envd double (test/support/envd-double.ts: it follows envd's published file API; it is
 * not the real envd). All are claimed at once (concurrent PATCHes of the claim annotation, each on a connection
 * of its own opened beforehand), and for each the time from its claim annotation recorded (kube-apiserver's own
 * audit timestamp of the PATCH) to its .env_ready written is taken, with the envd requests it cost; and, beside
 * it, the time from sending the claim, which adds kube-apiserver taking 200 writes at once.
 * Target (docs/deliver-env.md): p99 under 1 s, REQUESTS_PER_CLAIM envd requests per delivery.
 *
 * Each Sandbox's folder also has the real run_with_envs.sh waiting in it under bash, its command printing the
 * wall-clock time it starts (`date +%s%N`), so the bench also takes the claim recorded to the wrapped app's first
 * instruction, split into watch (to the controller queueing it, from its log), queue (to the first envd request
 * answered), envd requests (to .env_ready written) and wake (to the app's start); first for
 * DELIVER_BENCH_SERIAL (100) other Sandboxes claimed one at a time, each once the one before has started its
 * app, then for the ones claimed at once, with the CPU of that burst by process (burst-cpu.ts). Targets
 * (issue 30): one at a time p50 <= 50 ms and p99 <= 150 ms; at once p99 <= 500 ms. Method and figures:
 * docs/benchmark.md.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request as httpsRequest } from 'node:https';
import { startEnvdDouble, type EnvdDouble } from '../../test/support/envd-double.js';
import { waitUntilWaiting } from '../../test/wrapper/run-wrapper.js';
import { wrappedSandboxPod } from '../../test/support/wrapped-sandbox-pod.js';
import { auditFlags, readAuditEvents } from '../../test/e2e/support/audit-log.js';
import { startCluster, type TestCluster } from '../../test/e2e/support/cluster.js';
import { burstCpuLine, perClaimLine, startBurstCpu } from './burst-cpu.js';
import { cpuGroup } from '../cpu-group.js';
import { quantile } from '../quantiles.js';
import { inParallel, population, send } from './population.js';

// Compiled to dist/bench-deliver/bench/deliver/run.js: the package root is four levels up.
const ROOT = new URL('../../../../', import.meta.url).pathname;
const CLI = path.join(ROOT, 'dist/cli/main.js');
const WRAPPER = path.join(ROOT, 'src/wrapper/run_with_envs.sh');
const COUNT = Number(process.env.DELIVER_BENCH_SANDBOXES ?? 200);
const SERIAL = Number(process.env.DELIVER_BENCH_SERIAL ?? 100);
const NS = 'bench-deliver';
/** Extra deliver-env flags, space-separated, e.g. "--concurrency 64". */
const EXTRA_ARGS = (process.env.DELIVER_BENCH_ARGS ?? '').split(' ').filter((arg) => arg !== '');

interface WaitingApp {
  child: ReturnType<typeof spawn>;
  /** Wall-clock ms at which the wrapped command started, as it printed it. */
  started: Promise<number>;
}

/** The real wrapper on a double's folder, its command printing its own start time; counted in `group`. */
function startApp(dir: string, group: ReturnType<typeof cpuGroup>): WaitingApp {
  const child = spawn('bash', [WRAPPER, '--', 'date', '+%s%N'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SANDBOX_ENV_DIR: dir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // From its start: the burst's figure is the group's growth over the burst, so its wait before is left out.
  if (!('unavailable' in group) && child.pid !== undefined) group.add(child.pid);
  let out = '';
  const started = new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('close', () => {
      const ns = /^(\d+)\n$/.exec(out)?.[1];
      if (ns === undefined) reject(new Error(`the app in ${dir} printed ${JSON.stringify(out)}`));
      else resolve(Number(BigInt(ns) / 1_000_000n) + Number(BigInt(ns) % 1_000_000n) / 1e6);
    });
  });
  started.catch(() => undefined);
  return { child, started };
}

/** The listing, one upload of both files and two Moves, and the wake when a wrapper waits (docs/deliver-env.md). */
const REQUESTS_PER_CLAIM = 5;

/**
 * How many requests each double had answered when its claim went out: a new term first looks into every
 * unclaimed pod (to clear what an earlier claim left), and that look is not part of the claim's delivery.
 */
const beforeClaim = new Map<EnvdDouble, number>();

/** The requests a double answered since its claim went out. */
function claimRequests(double: EnvdDouble): EnvdDouble['requests'] {
  return double.requests.slice(beforeClaim.get(double) ?? 0);
}

/** When .env_ready was in place: its upload answered, or its Move answered. */
function readyAt(double: EnvdDouble): number | undefined {
  return claimRequests(double).find(
    (r) =>
      (r.operation === 'upload' || r.operation === 'move') && r.path === '/var/sandbox/.env_ready' && r.status === 200,
  )?.at;
}

interface Split {
  total: number[];
  /** Claim recorded -> the controller saw it (its watch event queued the Sandbox). */
  watch: number[];
  /** Seen -> the double answered the delivery's first request: the work queue, then that request. */
  queue: number[];
  envd: number[];
  wake: number[];
}

function splitLine(label: string, split: Split): string {
  const fmt = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `p50 ${quantile(sorted, 0.5).toFixed(1)} / p99 ${quantile(sorted, 0.99).toFixed(1)}`;
  };
  return (
    `  ${label}: claim recorded -> app started ${fmt(split.total)} ms\n` +
    `    split: watch ${fmt(split.watch)}, queue ${fmt(split.queue)}, envd requests ${fmt(split.envd)}, wake ${fmt(split.wake)} ms\n`
  );
}

/**
 * When the controller first queued each Sandbox for the delivery it logged, by key: its 'env delivered' line's
 * time less the line's seenToReadyMs, both taken as it reports.
 */
function seenTimes(log: string): Map<string, number> {
  const seen = new Map<string, number>();
  for (const line of log.split('\n')) {
    if (!line.includes('"env delivered"')) continue;
    const entry = JSON.parse(line) as { sandbox?: string; time?: number; seenToReadyMs?: number };
    if (entry.sandbox !== undefined && entry.time !== undefined && entry.seenToReadyMs !== undefined)
      seen.set(entry.sandbox, entry.time - entry.seenToReadyMs);
  }
  return seen;
}

function summary(split: Split): { p50Ms: number; p99Ms: number } {
  const sorted = [...split.total].sort((a, b) => a - b);
  return { p50Ms: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99) };
}

async function main(): Promise<void> {
  const binDir =
    execFileSync('bash', [path.join(ROOT, 'test/e2e/cluster/build.sh'), 'kube'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .pop() ?? '';
  // Only the claims are audited: their ResponseComplete timestamp is when kube-apiserver had recorded each one.
  const auditDir = mkdtempSync(path.join(tmpdir(), 'si-bench-audit-'));
  const audit = auditFlags(auditDir, [
    { level: 'Metadata', verbs: ['patch'], resources: [{ group: 'agents.kruise.io', resources: ['sandboxes'] }] },
  ]);
  const cluster = await startCluster({ binDir, apiserverArgs: audit.flags }).catch((error: unknown) => {
    rmSync(auditDir, { recursive: true, force: true });
    throw error;
  });
  const dirs: string[] = [auditDir];
  const doubles: EnvdDouble[] = [];
  const apps: WaitingApp[] = [];
  const wrappers = cpuGroup('si-bench-wrappers');
  let controller: ReturnType<typeof spawn> | undefined;
  let agent: Agent | undefined;
  try {
    await cluster.installSandboxCrd(path.join(ROOT, 'test/fixtures/e2e/sandbox-crd.yaml'));
    await cluster.ensureNamespace(NS);
    await cluster.ensureNamespace('sandbox-system');
    for (let i = 0; i < COUNT + SERIAL; i += 1) {
      const dir = mkdtempSync(path.join(tmpdir(), 'si-bench-envd-'));
      dirs.push(dir);
      doubles.push(await startEnvdDouble({ root: dir, token: 'bench-token', halfWriteMs: 0 }));
      apps.push(startApp(dir, wrappers));
    }
    for (const [i, app] of apps.entries()) await waitUntilWaiting(app.child.pid ?? -1, dirs[i + 1] ?? '', 60_000);
    const allNames = doubles.map((_, i) => (i < SERIAL ? `sbx-serial-${i}` : `sbx-${i - SERIAL}`));
    const listFile = path.join(cluster.dir, 'bench-sandboxes.json');
    writeFileSync(
      listFile,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: allNames.map((name, i) => ({
          apiVersion: 'agents.kruise.io/v1alpha1',
          kind: 'Sandbox',
          metadata: { name, namespace: NS, annotations: { 'agents.kruise.io/runtime-url': doubles[i]?.url ?? '' } },
          spec: {
            runtimes: [{ name: 'agent-runtime' }],
            template: { spec: { containers: [{ name: 'main', image: 'app:1' }] } },
          },
        })),
      }),
    );
    await cluster.kubectlOk(['apply', '-f', listFile]);
    const uids = JSON.parse(await cluster.kubectlOk(['-n', NS, 'get', 'sandboxes', '-o', 'json'])) as {
      items: { metadata: { name: string; uid: string } }[];
    };
    const uidOf = new Map(uids.items.map((s) => [s.metadata.name, s.metadata.uid]));
    writeFileSync(
      listFile,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: allNames.map((name) => wrappedSandboxPod({ sandbox: name, sandboxUid: uidOf.get(name), namespace: NS })),
      }),
    );
    await cluster.kubectlOk(['apply', '-f', listFile]);
    await runAndName(cluster, allNames);

    const scale = await population(cluster, ROOT);
    controller = spawn(
      process.execPath,
      [
        CLI,
        'deliver-env',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--host',
        '127.0.0.1',
        '--metrics-port',
        String(scale.metricsPort),
        // info, the Deployment's level: each delivery's line gives when the controller saw the claim.
        '--log-level',
        'info',
        '--identity',
        'bench',
        // Every double listens on 127.0.0.1 at a port of its own, named by the runtime URL; the pods here have
        // no kubelet to report their IP, so the URL is followed as given (the address check costs nothing).
        '--trust-runtime-url',
        ...EXTRA_ARGS,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], env: scale.env },
    );
    scale.watch(controller.pid);
    let out = '';
    controller.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    // The claims go over kept-alive connections, one per Sandbox and opened before the clock starts: client-node
    // makes a TLS handshake per call, and a smaller pool would hold claims back in this process's queue, both of
    // which would measure this harness more than the controller.
    agent = new Agent({
      keepAlive: true,
      maxSockets: COUNT + SERIAL,
      maxFreeSockets: COUNT + SERIAL,
      ca: cluster.caPem,
      cert: cluster.admin.certPem,
      key: cluster.admin.keyPem,
    });
    const call = (method: 'GET' | 'PATCH', name: string, body?: unknown): Promise<void> =>
      new Promise((resolve, reject) => {
        const url = new URL(`${cluster.server}/apis/agents.kruise.io/v1alpha1/namespaces/${NS}/sandboxes/${name}`);
        const req = httpsRequest(
          url,
          { method, agent: agent, headers: { 'content-type': 'application/merge-patch+json' } },
          (res) => {
            res.resume();
            res.on('end', () =>
              res.statusCode === 200 ? resolve() : reject(new Error(`${method} ${name}: HTTP ${res.statusCode}`)),
            );
          },
        );
        req.on('error', reject);
        req.end(body === undefined ? undefined : JSON.stringify(body));
      });
    for (let tries = 0; ; tries += 1) {
      const lease = await cluster.kubectl([
        '-n',
        'sandbox-system',
        'get',
        'lease',
        'sandbox-injector-deliver-env',
        '-o',
        'jsonpath={.spec.holderIdentity}',
      ]);
      if (lease.stdout.trim() === 'bench') break;
      if (tries > 600) throw new Error(`deliver-env did not take the Lease: ${out}`);
      await sleep(100);
    }
    await sleep(1000);
    const claimBody = (i: number) => ({
      metadata: {
        annotations: {
          'agents.kruise.io/init-runtime-request': JSON.stringify({
            envVars: { API_KEY: `sk-bench-${i}`, GREETING: "hello 'world' $HOME", N: String(i) },
            accessToken: 'bench-token',
          }),
          'agents.kruise.io/claim-timestamp': new Date().toISOString(),
        },
      },
    });
    // One at a time: each claim once the app of the one before has started.
    const serialNames = allNames.slice(0, SERIAL);
    for (const [i, name] of serialNames.entries()) {
      beforeClaim.set(doubles[i] as EnvdDouble, (doubles[i] as EnvdDouble).requests.length);
      await call('PATCH', name, claimBody(i));
      await Promise.race([
        apps[i]?.started,
        sleep(30_000).then(() =>
          Promise.reject(new Error(`${name}: no app start in 30 s; deliver-env said: ${out.slice(-4000)}`)),
        ),
      ]);
    }
    const names = allNames.slice(SERIAL);
    const atOnce = doubles.slice(SERIAL);
    // All at once, right before the claims, so each Sandbox has its own connection open when its claim is sent.
    await Promise.all(names.map((name) => call('GET', name)));
    const open = Object.values(agent.freeSockets).reduce((sum, sockets) => sum + (sockets?.length ?? 0), 0);
    if (open < COUNT) throw new Error(`${open} of ${COUNT} claim connections open`);

    const burstCpu = startBurstCpu(controller.pid ?? -1, wrappers);
    const sentAt = new Map<string, number>();
    const patchedAt = new Map<string, number>();
    await Promise.all(
      names.map(async (name, i) => {
        const body = claimBody(i);
        beforeClaim.set(atOnce[i] as EnvdDouble, (atOnce[i] as EnvdDouble).requests.length);
        sentAt.set(name, Date.now());
        await call('PATCH', name, body);
        patchedAt.set(name, Date.now());
      }),
    );
    const deadline = Date.now() + 120_000;
    while (atOnce.some((d) => readyAt(d) === undefined)) {
      if (Date.now() > deadline)
        throw new Error(
          `only ${atOnce.filter((d) => readyAt(d) !== undefined).length} of ${COUNT} delivered in 120 s; deliver-env said: ${out.slice(-6000)}`,
        );
      await sleep(20);
    }
    const appStarts = await Promise.race([
      Promise.all(apps.map((app) => app.started)),
      sleep(120_000).then(() => Promise.reject(new Error('not every app started within 120 s'))),
    ]);
    const burst = burstCpu.stop();
    const latencies = names
      .map((name, i) => (readyAt(atOnce[i] as EnvdDouble) ?? 0) - (sentAt.get(name) ?? 0))
      .sort((a, b) => a - b);
    const requests = atOnce.reduce((sum, d) => sum + claimRequests(d).length, 0);
    // The audit log is written before each answer goes out (blocking mode), so every claim is in it by now.
    const recordedAt = new Map<string, number>();
    for (const event of readAuditEvents(audit.logPath)) {
      const name = event.objectRef?.name;
      if (event.verb === 'patch' && name !== undefined && event.stageTimestamp !== undefined)
        recordedAt.set(name, Date.parse(event.stageTimestamp));
    }
    if (allNames.some((name) => !Number.isFinite(recordedAt.get(name))))
      throw new Error(`the audit log has ${recordedAt.size} of ${COUNT + SERIAL} claims`);
    const fromRecorded = names
      .map((name, i) => (readyAt(atOnce[i] as EnvdDouble) ?? 0) - (recordedAt.get(name) ?? 0))
      .sort((a, b) => a - b);
    // Each delivery's log line is written as it ends, and read from the pipe some time after.
    let seenBy = seenTimes(out);
    for (const logDeadline = Date.now() + 30_000; allNames.some((name) => !seenBy.has(`${NS}/${name}`));) {
      if (Date.now() > logDeadline)
        throw new Error(`deliver-env logged ${seenBy.size} of ${allNames.length} deliveries`);
      await sleep(20);
      seenBy = seenTimes(out);
    }
    // Claim recorded -> the app's first instruction, and its split, from the bench's own observations and the
    // controller's log.
    const splitOf = (indices: number[]): Split => {
      const split: Split = { total: [], watch: [], queue: [], envd: [], wake: [] };
      for (const i of indices) {
        const double = doubles[i] as EnvdDouble;
        const recorded = recordedAt.get(allNames[i] ?? '') ?? Number.NaN;
        const first = claimRequests(double)[0]?.at ?? Number.NaN;
        const ready = readyAt(double) ?? Number.NaN;
        const app = appStarts[i] ?? Number.NaN;
        split.total.push(app - recorded);
        const seen = seenBy.get(`${NS}/${allNames[i] ?? ''}`) ?? Number.NaN;
        split.watch.push(seen - recorded);
        split.queue.push(first - seen);
        split.envd.push(ready - first);
        split.wake.push(app - ready);
      }
      return split;
    };
    const serialSplit = splitOf(serialNames.map((_, i) => i));
    const atOnceSplit = splitOf(names.map((_, i) => SERIAL + i));
    // Apart: how long kube-apiserver took to take the claims, and the rest, from each claim's answer.
    const patching = names.map((name) => (patchedAt.get(name) ?? 0) - (sentAt.get(name) ?? 0)).sort((a, b) => a - b);
    const afterPatch = names
      .map((name, i) => (readyAt(atOnce[i] as EnvdDouble) ?? 0) - (patchedAt.get(name) ?? 0))
      .sort((a, b) => a - b);
    // And the rest split at the controller's first envd request: the watch event and the queue before it, the
    // envd requests after it.
    const firstRequestAt = (double: EnvdDouble) => claimRequests(double)[0]?.at ?? 0;
    const toFirstRequest = names
      .map((name, i) => firstRequestAt(atOnce[i] as EnvdDouble) - (patchedAt.get(name) ?? 0))
      .sort((a, b) => a - b);
    const envdPhase = atOnce.map((double) => (readyAt(double) ?? 0) - firstRequestAt(double)).sort((a, b) => a - b);
    const result = {
      sandboxes: COUNT,
      p50Ms: quantile(fromRecorded, 0.5),
      p99Ms: quantile(fromRecorded, 0.99),
      maxMs: fromRecorded.at(-1),
      sentP50Ms: quantile(latencies, 0.5),
      sentP99Ms: quantile(latencies, 0.99),
      requestsPerDelivery: requests / COUNT,
      claimAcceptedP50Ms: quantile(patching, 0.5),
      claimAcceptedP99Ms: quantile(patching, 0.99),
      acceptedToReadyP50Ms: quantile(afterPatch, 0.5),
      acceptedToReadyP99Ms: quantile(afterPatch, 0.99),
      acceptedToFirstRequestP50Ms: quantile(toFirstRequest, 0.5),
      acceptedToFirstRequestP99Ms: quantile(toFirstRequest, 0.99),
      envdRequestsP50Ms: quantile(envdPhase, 0.5),
      envdRequestsP99Ms: quantile(envdPhase, 0.99),
      targetMet: quantile(fromRecorded, 0.99) < 1000 && requests / COUNT <= REQUESTS_PER_CLAIM,
      // The controller's own histogram counts from the claim-timestamp, which the claimer sets as it sends.
      targetMetFromSent: quantile(latencies, 0.99) < 1000 && requests / COUNT <= REQUESTS_PER_CLAIM,
      appStartSerial: summary(serialSplit),
      appStartAtOnce: summary(atOnceSplit),
      burstCpu: burst,
      appStartTargetMet:
        summary(serialSplit).p50Ms <= 50 && summary(serialSplit).p99Ms <= 150 && summary(atOnceSplit).p99Ms <= 500,
    };
    process.stdout.write(
      `deliver-env: ${COUNT} Sandboxes claimed at once, claim annotation recorded (kube-apiserver's audit time) -> .env_ready written\n`,
    );
    process.stdout.write(
      `  p50 ${result.p50Ms} ms   p99 ${result.p99Ms} ms   max ${result.maxMs} ms   ${result.requestsPerDelivery} envd requests per delivery\n`,
    );
    process.stdout.write(
      `  from the claim sent instead (adds kube-apiserver taking ${COUNT} writes at once): p50 ${result.sentP50Ms} ms, p99 ${result.sentP99Ms} ms\n`,
    );
    process.stdout.write(
      `  claim sent -> its answer: p50 ${result.claimAcceptedP50Ms} ms, p99 ${result.claimAcceptedP99Ms} ms; claim answered -> .env_ready: p50 ${result.acceptedToReadyP50Ms} ms, p99 ${result.acceptedToReadyP99Ms} ms\n`,
    );
    process.stdout.write(
      `  claim answered -> first envd request (watch, queue): p50 ${result.acceptedToFirstRequestP50Ms} ms, p99 ${result.acceptedToFirstRequestP99Ms} ms; first envd request -> .env_ready: p50 ${result.envdRequestsP50Ms} ms, p99 ${result.envdRequestsP99Ms} ms\n`,
    );
    process.stdout.write(
      `  target (p99 < 1000 ms, ${REQUESTS_PER_CLAIM} requests per delivery): ${result.targetMet ? 'met' : 'NOT met'}; ` +
        `from the claim sent (its claim-timestamp, where the controller's own histogram starts): ${result.targetMetFromSent ? 'met' : 'NOT met'}\n`,
    );
    process.stdout.write(`the wrapped app started (its own clock), through the real run_with_envs.sh:\n`);
    process.stdout.write(splitLine(`${SERIAL} claims one at a time`, serialSplit));
    process.stdout.write(splitLine(`${COUNT} claims at once`, atOnceSplit));
    process.stdout.write(burstCpuLine(burst));
    process.stdout.write(perClaimLine(burst, COUNT));
    process.stdout.write(
      `  target (one at a time p50 <= 50 ms and p99 <= 150 ms, at once p99 <= 500 ms): ${result.appStartTargetMet ? 'met' : 'NOT met'}\n`,
    );
    process.stdout.write(`${JSON.stringify(result)}\n`);
    await scale.report();
  } finally {
    controller?.kill('SIGTERM');
    for (const app of apps) app.child.kill('SIGTERM');
    // A cgroup can be removed once its tasks are gone; the wrappers exit at once on SIGTERM.
    await Promise.race([Promise.all(apps.map((app) => app.started.catch(() => undefined))), sleep(10_000)]);
    if (!('unavailable' in wrappers)) wrappers.remove();
    agent?.destroy();
    for (const double of doubles) await double.close();
    await cluster.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

await main();

/**
 * As a kubelet and upstream's controller would: each pod runs, and its Sandbox's status.podInfo.podUID names it.
 * deliver-env sends only to the pod a Sandbox names, once it runs with an IP of its own (here 127.0.0.1: the
 * runtime URL, which the bench trusts, says where each envd double is).
 */
async function runAndName(cluster: TestCluster, names: readonly string[]): Promise<void> {
  const agent = new Agent({
    keepAlive: true,
    ca: cluster.caPem,
    cert: cluster.admin.certPem,
    key: cluster.admin.keyPem,
  });
  const merge = 'application/merge-patch+json';
  const base = `${cluster.server}/api/v1/namespaces/${NS}/pods`;
  const sandboxes = `${cluster.server}/apis/agents.kruise.io/v1alpha1/namespaces/${NS}/sandboxes`;
  try {
    await inParallel(names.length, async (i) => {
      const name = names[i] ?? '';
      const status = { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] };
      const pod = (await send(agent, 'PATCH', `${base}/${name}-pod/status`, { status }, merge)) as {
        metadata: { uid: string };
      };
      const podInfo = { podUID: pod.metadata.uid, podIP: '127.0.0.1' };
      await send(agent, 'PATCH', `${sandboxes}/${name}/status`, { status: { podInfo } }, merge);
    });
  } finally {
    agent.destroy();
  }
}
