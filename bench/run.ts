/**
 * `npm run bench`: the built webhook (one process, as `npm start` runs it) against bare Fastify HTTPS servers
 * with the same TLS and JSON parser, side by side in one run, over HTTPS keep-alive.
 *
 *   parse-only floor     bare Fastify: parse the review, answer "allowed"
 *   same-answer floor    bare Fastify: parse the review, answer the webhook's own answer to the injecting
 *                        review, byte for byte, with the request's uid
 *   same-work floor      bare Fastify: parse the review, make that answer per request from the webhook's patch
 *                        operations (held as plain objects): stringify, UTF-8, base64, envelope with the uid
 *   webhook, injecting   a review asking for agent-runtime + csi with policy Auto
 *   webhook, no-op       the same pod, same size, asking for nothing
 *
 * The headline is the webhook against the same-work floor: same parse, same TLS, same bytes on the wire, and
 * the answer's text made per request as no webhook can avoid, so what is left between them is the work of
 * deciding and recording the injection. The same-answer floor, which sends cached bytes, is reported beside it. For each review shape, each target gets a warm-up, then
 * rounds measure the targets in turn so a change in background load hits all of them alike, and the median
 * round is reported. Then the webhook and the same-answer floor run at a steady rate of half the floor's peak,
 * for their latency. Before any of it, the review function is timed in-process on pods of growing size.
 * Linux only: CPU and RSS come from /proc. See docs/benchmark.md for the knobs.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import {
  heldLoop,
  linearity,
  loadPatchEncoder,
  loadReview,
  scaledPair,
  timePair,
  type HeldLoop,
  type Linearity,
  type ReviewTiming,
} from './inprocess.js';
import { autocannonRate, peak, steady, type LoadResult, type LoadTarget } from './load.js';
import { freePort, procSample, send, startNode, stop, waitReady, webhookArgs, type Reply } from './procs.js';
import { DEFAULT_SHAPES, INJECTING_UID, parseShapes, shapeName, shapeReviews, type ShapeReviews } from './reviews.js';

// Compiled to dist/bench/run.js (dist/ is outside lint and git); the package root is two levels up.
const DIST = new URL('../', import.meta.url).href;
const ROOT = new URL('../../', import.meta.url).pathname;
const BASELINE = new URL('./baseline-server.js', import.meta.url).pathname;
const CONFIG_CASE = join(ROOT, 'test/fixtures/conformance/01-agent-runtime-basic.json');
// Read as the run starts, right after `npm run bench` built dist/: a commit made during the run is not measured.
const COMMIT = gitDescription();

/** A positive number from the environment, or the default; anything else stops the run before it starts. */
function knob(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name}: "${raw}" is not a positive number`);
  return value;
}

const QUICK = process.env.BENCH_QUICK === '1';
const SECONDS = knob('BENCH_SECONDS', QUICK ? 2 : 10);
const ROUNDS = Math.round(knob('BENCH_ROUNDS', QUICK ? 1 : 3));
const WARMUP = knob('BENCH_WARMUP', QUICK ? 1 : Math.min(5, SECONDS));
const CONNECTIONS = Math.round(knob('BENCH_CONNECTIONS', 16));
const RATE_SECONDS = knob('BENCH_RATE_SECONDS', SECONDS);
// A fixed rate instead of half the floor's peak: to compare commits or load clients at one rate.
const FIXED_RATE = process.env.BENCH_RATE === undefined ? undefined : Math.round(knob('BENCH_RATE', 1));
const RATE_CLIENT = process.env.BENCH_RATE_CLIENT ?? 'steady';
const INPROCESS_MS = knob('BENCH_INPROCESS_MS', QUICK ? 150 : 600);
// A quick run checks the harness on the issue's review only.
const SHAPES = parseShapes(
  process.env.BENCH_REVIEWS ?? (QUICK ? (DEFAULT_SHAPES.split(',')[0] ?? '') : DEFAULT_SHAPES),
);
const SCALE = (process.env.BENCH_SCALE ?? '1,4,16,64').split(',').map(Number);
if (RATE_CLIENT !== 'steady' && RATE_CLIENT !== 'autocannon')
  throw new Error('BENCH_RATE_CLIENT: steady or autocannon');
if (SCALE.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('BENCH_SCALE: container counts, e.g. 1,4,16,64');

/** The goals, against the same-work floor; the no-op path against the parse-only floor. */
const TARGET = { throughput: 0.85, cpu: 1.2, p99: 1.5, noop: 0.9 };
/** Cost per added container may grow this much from small to large pods and still count as linear; a quadratic cost gives ~4.7x. */
const LINEAR_SLOPE = 2;
/** Issue 10, item 5: no review may hold the event loop more than a few ms beyond its parse. */
const HELD_LOOP_MS = 5;
const MANY_ANNOTATIONS = Math.round(knob('BENCH_ANNOTATIONS', 30_000));
const HELD_LOOP_RUNS = QUICK ? 5 : 15;
const SENDER_LAG_MS = 1;

interface Target {
  label: string;
  port: number;
  pid: number;
  body: string;
}

interface Measurement {
  label: string;
  admissionsPerSecond: number;
  p50: number;
  p99: number;
  max: number;
  rssMiB: number;
  cpuPercent: number;
  cpuMsPerAdmission: number;
  errors: number;
  senderLagP99?: number;
}

interface ShapeResult {
  reviews: ShapeReviews;
  answerBytes: number;
  patchBytes: number;
  tls: string;
  peak: {
    parseOnly: Measurement;
    sameAnswer: Measurement;
    floor: Measurement;
    injecting: Measurement;
    noop: Measurement;
  };
  rate: number;
  /** `floor` is the same-work floor, the headline's yardstick. */
  atRate: { floor: Measurement; injecting: Measurement };
}

const progress = (line: string): void => void process.stderr.write(`${line}\n`);

async function measure(target: Target, ca: Buffer, run: (t: LoadTarget) => Promise<LoadResult>): Promise<Measurement> {
  const before = await procSample(target.pid);
  const started = performance.now();
  const result = await run({ port: target.port, body: target.body, ca, connections: CONNECTIONS });
  const seconds = (performance.now() - started) / 1000;
  const after = await procSample(target.pid);
  const cpuMs = after.cpuMs - before.cpuMs;
  return {
    label: target.label,
    admissionsPerSecond: result.admissionsPerSecond,
    ...result.latency,
    rssMiB: after.rssKiB / 1024,
    cpuPercent: cpuMs / 10 / seconds,
    cpuMsPerAdmission: cpuMs / Math.max(1, result.answered + result.errors),
    errors: result.errors,
    ...(result.senderLagP99 === undefined ? {} : { senderLagP99: result.senderLagP99 }),
  };
}

/** Interleaved rounds of every target; per target, the round with the median `by`, whole, so its figures agree. */
async function rounds(
  targets: Target[],
  ca: Buffer,
  run: (t: LoadTarget) => Promise<LoadResult>,
  by: (m: Measurement) => number,
  what: string,
): Promise<Measurement[]> {
  const all: Measurement[][] = targets.map(() => []);
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const [i, target] of targets.entries()) {
      progress(`  round ${round}/${ROUNDS}, ${what}: ${target.label}`);
      all[i]?.push(await measure(target, ca, run));
    }
  }
  return all.map((measurements) => {
    const sorted = [...measurements].sort((x, y) => by(x) - by(y));
    const middle = sorted[Math.floor(sorted.length / 2)];
    if (middle === undefined) throw new Error('no measurements');
    return middle;
  });
}

/** The webhook's answer, checked to be the same every time: the floor replays it, so it must not vary. */
async function webhookAnswer(port: number, ca: Buffer, body: string): Promise<Buffer> {
  const [first, second] = [await send(port, ca, body), await send(port, ca, body)];
  if (first.status !== 200 || !first.body.equals(second.body)) {
    throw new Error(`the webhook's answer is not a stable 200 (${first.status}, ${second.status})`);
  }
  return first.body;
}

/**
 * Each answering floor must answer what the webhook answers, for any uid, headers included but for the date;
 * and every floor must negotiate the TLS the webhook does, or "same TLS" would only be assumed.
 */
async function checkSameAnswer(
  webhookPort: number,
  floors: { label: string; port: number }[],
  parseOnlyPort: number,
  ca: Buffer,
  injecting: string,
): Promise<string> {
  let tls = '';
  const headers = (reply: Reply): string =>
    JSON.stringify(
      Object.entries(reply.headers)
        .filter(([name]) => name !== 'date')
        .sort(),
    );
  for (const uid of [INJECTING_UID, 'bench-uid-check-\u00e9"\\']) {
    const body = injecting.replace(`"uid":"${INJECTING_UID}"`, `"uid":${JSON.stringify(uid)}`);
    const webhook = await send(webhookPort, ca, body);
    for (const { label, port } of floors) {
      const floor = await send(port, ca, body);
      if (!webhook.body.equals(floor.body) || headers(webhook) !== headers(floor) || webhook.status !== floor.status) {
        throw new Error(
          `the ${label} does not answer as the webhook does for uid ${JSON.stringify(uid)}:\n` +
            `webhook ${webhook.status} ${headers(webhook)}\nfloor   ${floor.status} ${headers(floor)}`,
        );
      }
      if (floor.tls !== webhook.tls) throw new Error(`TLS differs: webhook ${webhook.tls}, ${label} ${floor.tls}`);
    }
    const parseOnly = await send(parseOnlyPort, ca, body);
    if (parseOnly.tls !== webhook.tls)
      throw new Error(`TLS differs: webhook ${webhook.tls}, parse-only floor ${parseOnly.tls}`);
    tls = webhook.tls;
  }
  return tls;
}

async function benchShape(
  reviews: ShapeReviews,
  webhook: { port: number; pid: number },
  parseOnly: { port: number; pid: number },
  ca: Buffer,
  work: string,
  floorArgs: string[],
): Promise<ShapeResult> {
  const name = shapeName(reviews.shape);
  const answer = await webhookAnswer(webhook.port, ca, reviews.injecting);
  const patch = (JSON.parse(answer.toString('utf8')) as { response: { patch?: string } }).response.patch;
  const noop = JSON.parse((await send(webhook.port, ca, reviews.noop)).body.toString('utf8')) as {
    response: { patch?: string };
  };
  if (patch === undefined || noop.response.patch !== undefined) {
    throw new Error(`${name}: the bench reviews do not behave as intended: one must inject, the other not`);
  }
  const answerFile = join(work, `answer-${reviews.shape.containers}-${reviews.shape.bytes}.json`);
  await writeFile(answerFile, answer);
  const sameAnswerPort = await freePort();
  const sameAnswer = startNode([
    BASELINE,
    '--port',
    String(sameAnswerPort),
    ...floorArgs,
    '--answer',
    answerFile,
    '--uid',
    INJECTING_UID,
  ]);
  const floorPort = await freePort();
  const floor = startNode([BASELINE, '--port', String(floorPort), ...floorArgs, '--answer', answerFile, '--same-work']);
  try {
    await waitReady(sameAnswerPort, join(work, 'certs/ca.crt'), sameAnswer);
    await waitReady(floorPort, join(work, 'certs/ca.crt'), floor);
    const tls = await checkSameAnswer(
      webhook.port,
      [
        { label: 'same-answer floor', port: sameAnswerPort },
        { label: 'same-work floor', port: floorPort },
      ],
      parseOnly.port,
      ca,
      reviews.injecting,
    );
    const targets: Target[] = [
      { label: 'parse-only floor: bare Fastify, answers allowed', ...parseOnly, body: reviews.injecting },
      {
        label: "same-answer floor: bare Fastify, the webhook's answer as cached bytes",
        port: sameAnswerPort,
        pid: sameAnswer.pid ?? 0,
        body: reviews.injecting,
      },
      {
        label: 'same-work floor: bare Fastify, that answer made from its operations',
        port: floorPort,
        pid: floor.pid ?? 0,
        body: reviews.injecting,
      },
      { label: 'webhook, injecting', ...webhook, body: reviews.injecting },
      { label: 'webhook, no-op review', ...webhook, body: reviews.noop },
    ];
    progress(`${name}: warm-up, ${WARMUP} s per target`);
    for (const target of targets)
      await peak({ port: target.port, body: target.body, ca, connections: CONNECTIONS }, WARMUP);
    const [parseOnlyPeak, sameAnswerPeak, floorPeak, injectingPeak, noopPeak] = await rounds(
      targets,
      ca,
      (t) => peak(t, SECONDS),
      (m) => m.admissionsPerSecond,
      `peak, ${SECONDS} s`,
    );
    if (
      parseOnlyPeak === undefined ||
      sameAnswerPeak === undefined ||
      floorPeak === undefined ||
      injectingPeak === undefined ||
      noopPeak === undefined
    ) {
      throw new Error('missing measurements');
    }

    const rate = FIXED_RATE ?? Math.max(1, Math.round(floorPeak.admissionsPerSecond / 2));
    const paced =
      RATE_CLIENT === 'steady'
        ? (t: LoadTarget): Promise<LoadResult> => steady(t, rate, RATE_SECONDS)
        : (t: LoadTarget): Promise<LoadResult> => autocannonRate(t, rate, RATE_SECONDS);
    const [floorAtRate, injectingAtRate] = await rounds(
      [targets[2], targets[3]].filter((t) => t !== undefined),
      ca,
      paced,
      (m) => m.p99,
      `${rate}/s, ${RATE_SECONDS} s`,
    );
    if (floorAtRate === undefined || injectingAtRate === undefined) throw new Error('missing measurements');
    return {
      reviews,
      answerBytes: answer.length,
      tls,
      patchBytes: Buffer.from(patch, 'base64').length,
      peak: {
        parseOnly: parseOnlyPeak,
        sameAnswer: sameAnswerPeak,
        floor: floorPeak,
        injecting: injectingPeak,
        noop: noopPeak,
      },
      rate,
      atRate: { floor: floorAtRate, injecting: injectingAtRate },
    };
  } finally {
    await stop(floor);
    await stop(sameAnswer);
  }
}

interface InProcess {
  held: HeldLoop;
  shapes: ReviewTiming[];
  scale: ReviewTiming[];
  injecting: Linearity;
  noop: Linearity;
}

async function inProcess(configFile: string, shapes: ShapeReviews[]): Promise<InProcess> {
  const review = await loadReview(DIST, configFile);
  const encodePatch = await loadPatchEncoder(DIST);
  const envVars = shapes[0]?.envVarsPerContainer ?? 0;
  progress(`in-process: review function on ${shapes.length} shapes and on ${SCALE.join(', ')} containers`);
  const first = shapes[0];
  // One pass thrown away: the first body timed otherwise pays for the JIT warming up the whole review path.
  if (first !== undefined)
    await timePair(review, encodePatch, 'warm-up', first.shape.containers, first.injecting, first.noop, INPROCESS_MS);
  const timings: ReviewTiming[] = [];
  for (const reviews of shapes) {
    timings.push(
      await timePair(
        review,
        encodePatch,
        shapeName(reviews.shape),
        reviews.shape.containers,
        reviews.injecting,
        reviews.noop,
        INPROCESS_MS,
      ),
    );
  }
  const scale: ReviewTiming[] = [];
  for (const containers of SCALE) {
    const { injecting, noop } = scaledPair(containers, envVars);
    scale.push(
      await timePair(review, encodePatch, `${containers} containers`, containers, injecting, noop, INPROCESS_MS),
    );
  }
  progress(`in-process: a review of a pod with ${MANY_ANNOTATIONS} annotations, ${HELD_LOOP_RUNS} times`);
  const held = await heldLoop(review, MANY_ANNOTATIONS, HELD_LOOP_RUNS);
  return {
    held,
    shapes: timings,
    scale,
    injecting: linearity(scale, (t) => t.injectingUs),
    noop: linearity(scale, (t) => t.noopUs),
  };
}

function gitDescription(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return dirty === '' ? commit : `${commit} + uncommitted changes in src/`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadBefore = loadavg();
  const work = await mkdtemp(join(tmpdir(), 'si-bench-'));
  const children: ChildProcess[] = [];
  try {
    const configCase = JSON.parse(await readFile(CONFIG_CASE, 'utf8')) as { configMap: unknown };
    const configFile = join(work, 'config.json');
    await writeFile(configFile, JSON.stringify(configCase.configMap));
    const shapes = SHAPES.map(shapeReviews);

    // Before the servers start, so the timing has the machine to itself as far as this run goes.
    const local = await inProcess(configFile, shapes);

    const webhookPort = await freePort();
    const webhook = startNode(webhookArgs(webhookPort, configFile, join(work, 'certs')));
    children.push(webhook);
    const ca = await waitReady(webhookPort, join(work, 'certs/ca.crt'), webhook);
    // The webhook's TLS policy is its own and may change; the floors take whichever suite it negotiates.
    const cipher = (await send(webhookPort, ca, '', '/readyz')).tls.split(' ')[1] ?? '';
    const floorArgs = [
      '--cert',
      join(work, 'certs/tls.crt'),
      '--key',
      join(work, 'certs/tls.key'),
      '--ciphers',
      cipher,
    ];
    const parseOnlyPort = await freePort();
    const parseOnly = startNode([BASELINE, '--port', String(parseOnlyPort), ...floorArgs]);
    children.push(parseOnly);
    await waitReady(parseOnlyPort, join(work, 'certs/ca.crt'), parseOnly);

    const results: ShapeResult[] = [];
    for (const reviews of shapes) {
      results.push(
        await benchShape(
          reviews,
          { port: webhookPort, pid: webhook.pid ?? 0 },
          { port: parseOnlyPort, pid: parseOnly.pid ?? 0 },
          ca,
          work,
          floorArgs,
        ),
      );
    }
    process.stdout.write(report(startedAt, [loadBefore, loadavg()], results, local));
  } finally {
    for (const child of children) await stop(child);
    await rm(work, { recursive: true, force: true });
  }
}

const x = (value: number): string => `${value.toFixed(2)}x`;
const ms = (value: number): string => value.toFixed(2);
const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');

function headline(r: ShapeResult): {
  lines: string[];
  throughput: number;
  cpu: number;
  p99: number;
  errors: number;
  noop: number;
  sameAnswer: number;
} {
  const { floor, injecting, noop: noopPeak, parseOnly, sameAnswer: cached } = r.peak;
  const noop = noopPeak.admissionsPerSecond / parseOnly.admissionsPerSecond;
  const sameAnswer = injecting.admissionsPerSecond / cached.admissionsPerSecond;
  const throughput = injecting.admissionsPerSecond / floor.admissionsPerSecond;
  const cpu = injecting.cpuMsPerAdmission / floor.cpuMsPerAdmission;
  const p99 = r.atRate.injecting.p99 / r.atRate.floor.p99;
  const errors = Object.values(r.peak)
    .concat(Object.values(r.atRate))
    .reduce((sum, m) => sum + m.errors, 0);
  const clean = errors === 0;
  const warning = senderWarning(r.atRate.floor, r.atRate.injecting);
  const late = warning.length > 0 ? ' (unreliable: the sender was late)' : '';
  return {
    throughput,
    cpu,
    p99,
    errors,
    noop,
    sameAnswer,
    lines: [
      `  injecting / same-work floor, admissions/s:      ${x(throughput)}   target >= ${TARGET.throughput}x: ${verdict(clean && throughput >= TARGET.throughput)}`,
      `  injecting / same-work floor, CPU per admission: ${x(cpu)}   target <= ${TARGET.cpu}x: ${verdict(clean && cpu <= TARGET.cpu)}`,
      `  p99 at ${r.rate}/s (${FIXED_RATE === undefined ? "half the same-work floor's peak" : 'BENCH_RATE'}), injecting / same-work floor: ${ms(r.atRate.injecting.p99)} / ${ms(r.atRate.floor.p99)} ms = ${x(p99)}   target <= ${TARGET.p99}x: ${verdict(clean && p99 <= TARGET.p99)}${late}`,
      `  no-op webhook / parse-only floor, admissions/s: ${x(noop)}   target >= ${TARGET.noop}x: ${verdict(clean && noop >= TARGET.noop)} (CPU per admission ${x(noopPeak.cpuMsPerAdmission / parseOnly.cpuMsPerAdmission)})`,
      `  beside them: injecting / same-answer floor (cached bytes), admissions/s ${x(sameAnswer)}, CPU per admission ${x(injecting.cpuMsPerAdmission / cached.cpuMsPerAdmission)}`,
      `  errors in all runs of this review: ${errors}`,
      ...warning,
    ],
  };
}

/**
 * Latency at a fixed rate counts from when each review was due, so a sender that could not keep to the schedule
 * (the machine busy) adds its own delay to both p99s and the ratio says less than it seems to.
 */
function senderWarning(...measurements: Measurement[]): string[] {
  const lag = Math.max(...measurements.map((m) => m.senderLagP99 ?? 0));
  if (lag <= SENDER_LAG_MS) return [];
  return [
    `  (the sender ran up to ${ms(lag)} ms late at p99, above ${SENDER_LAG_MS} ms: the p99s include its delay; rerun on a quieter machine)`,
  ];
}

function report(startedAt: Date, load: [number[], number[]], results: ShapeResult[], local: InProcess): string {
  const cpu = cpus();
  const lines: string[] = [
    `sandbox-injector bench, ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, commit ${COMMIT}`,
    `machine: ${cpu.length} x ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Linux ${release()}, Node ${process.version}`,
    `load average (1/5/15 min) before: ${load[0].map((l) => l.toFixed(2)).join(' ')}, after: ${load[1].map((l) => l.toFixed(2)).join(' ')}` +
      ` (above ${cpu.length}, the core count, figures are noisy)`,
    `load: ${CONNECTIONS} keep-alive HTTPS connections from this process; peak: median of ${ROUNDS} interleaved rounds of ${SECONDS} s` +
      ` after ${WARMUP} s of warm-up per target; steady rate: ${RATE_CLIENT === 'steady' ? 'open loop' : 'autocannon overallRate'}, ${ROUNDS} x ${RATE_SECONDS} s, median p99`,
    '',
  ];
  const rows: string[] = [];
  const loadText = `${load[0][0]?.toFixed(2) ?? '?'} / ${load[1][0]?.toFixed(2) ?? '?'}`;
  const mode = `${ROUNDS} x ${SECONDS} s, ${CONNECTIONS} conn.${RATE_CLIENT === 'steady' ? '' : ', autocannon rate'}${FIXED_RATE === undefined ? '' : `, at ${FIXED_RATE}/s`}`;
  for (const r of results) {
    const h = headline(r);
    const { shape, envVarsPerContainer } = r.reviews;
    lines.push(
      `== ${shapeName(shape)} (${envVarsPerContainer} env vars each): answer ${r.answerBytes} B, patch ${r.patchBytes} B decoded, ${r.tls}`,
    );
    lines.push('HEADLINE', ...h.lines, '');
    lines.push('| peak | admissions/s | p50 ms | p99 ms | server CPU | CPU ms/admission | RSS MiB | errors |');
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const m of [r.peak.parseOnly, r.peak.sameAnswer, r.peak.floor, r.peak.injecting, r.peak.noop]) {
      lines.push(
        `| ${m.label} | ${m.admissionsPerSecond.toFixed(0)} | ${ms(m.p50)} | ${ms(m.p99)} | ${m.cpuPercent.toFixed(0)}% | ${m.cpuMsPerAdmission.toFixed(3)} | ${m.rssMiB.toFixed(0)} | ${m.errors} |`,
      );
    }
    lines.push('');
    const client = RATE_CLIENT === 'steady' ? 'steady' : 'autocannon overallRate';
    lines.push(
      `| at ${r.rate}/s, ${client} | answered/s | p50 ms | p99 ms | max ms | CPU ms/admission | sender lag p99 ms | errors |`,
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const m of [r.atRate.floor, r.atRate.injecting]) {
      lines.push(
        `| ${m.label} | ${m.admissionsPerSecond.toFixed(0)} | ${ms(m.p50)} | ${ms(m.p99)} | ${ms(m.max)} | ${m.cpuMsPerAdmission.toFixed(3)} | ${m.senderLagP99 === undefined ? '-' : ms(m.senderLagP99)} | ${m.errors} |`,
      );
    }
    const { parseOnly, sameAnswer, floor } = r.peak;
    lines.push('');
    lines.push(
      `same-answer floor / parse-only floor: admissions/s ${x(sameAnswer.admissionsPerSecond / parseOnly.admissionsPerSecond)}, ` +
        `CPU per admission ${x(sameAnswer.cpuMsPerAdmission / parseOnly.cpuMsPerAdmission)} (what the bigger answer costs)`,
    );
    lines.push(
      `same-work floor / same-answer floor: admissions/s ${x(floor.admissionsPerSecond / sameAnswer.admissionsPerSecond)}, ` +
        `CPU per admission ${x(floor.cpuMsPerAdmission / sameAnswer.cpuMsPerAdmission)} (what making the answer's text costs)`,
    );
    lines.push('');
    rows.push(
      `| ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} | ${COMMIT} | ${cpu.length} x ${cpu[0]?.model.trim() ?? '?'} | ` +
        `${loadText} | ${mode} | ${shape.containers} / ${shape.bytes} B | ${x(h.throughput)} | ${x(h.cpu)} | ${x(h.p99)} | ${h.errors} | ${x(h.noop)} | ${x(h.sameAnswer)} |`,
    );
  }
  lines.push(
    "In-process, the review function and the answer's serialization on a parsed body (µs per review, lower quartile of batches):",
  );
  lines.push(
    '| review | containers | body B | JSON.parse of the body | injecting | of which, its patch from the operations | no-op | no-op / JSON.parse |',
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const t of [...local.shapes, ...local.scale]) {
    lines.push(
      `| ${t.label} | ${t.containers} | ${t.bytes} | ${t.parseUs.toFixed(1)} | ${t.injectingUs.toFixed(1)} | ` +
        `${t.patchTextUs.toFixed(1)} | ${t.noopUs.toFixed(1)} | ${x(t.noopUs / t.parseUs)} |`,
    );
  }
  const first = SCALE.reduce((a, b) => Math.min(a, b));
  const last = SCALE.reduce((a, b) => Math.max(a, b));
  const linear = (l: Linearity): string =>
    `${x(l.slopeRatio)} (${l.slopeRatio <= LINEAR_SLOPE ? 'linear' : 'NOT linear'})`;
  lines.push(
    `linearity, ${last} vs ${first} containers: injecting ${x(local.injecting.growth)} the time, no-op ${x(local.noop.growth)}; ` +
      `cost per added container, large pods / small pods: injecting ${linear(local.injecting)}, no-op ${linear(local.noop)}` +
      ` (1x is linear; target <= ${LINEAR_SLOPE}x)`,
  );
  const { held } = local;
  lines.push('');
  lines.push(
    `${held.keys}-key annotations (a ${held.bytes} B review, legal: under 256 KiB of annotations), ms beyond parse: ` +
      `${held.beyondParseMs.toFixed(2)} median, ${held.maxBeyondParseMs.toFixed(2)} max of ${held.runs} (JSON.parse ${held.parseMs.toFixed(2)}); ` +
      `target < ${HELD_LOOP_MS} ms: ${held.beyondParseMs < HELD_LOOP_MS ? 'met' : 'NOT met'}`,
  );
  const scaleNote = `in-process ${last} vs ${first} containers: injecting ${x(local.injecting.growth)}, per-container slope ${x(local.injecting.slopeRatio)}`;
  lines.push('');
  lines.push(`history rows for docs/benchmark.md (${scaleNote}):`, ...rows);
  return `${lines.join('\n')}\n`;
}

await main();
