/**
 * The webhook against its floors on one review shape: the floors started beside it, checked to answer what it
 * answers over the same TLS, warmed up, then measured in interleaved rounds at peak and at a steady rate.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { autocannonRate, peak, steady, type LoadResult, type LoadTarget } from './load.js';
import { freePort } from '../harness/serve.js';
import { procSample, send, startNode, stop, waitReady, type Reply } from './procs.js';
import { INJECTING_UID, shapeName, type ShapeReviews } from './reviews.js';
import { CONNECTIONS, FIXED_RATE, RATE_CLIENT, RATE_SECONDS, ROUNDS, SECONDS, WARMUP, progress } from './settings.js';

/** The floors' server, bare Fastify: its flags say which floor it is. */
export const BASELINE = new URL('./baseline-server.js', import.meta.url).pathname;

interface Target {
  label: string;
  port: number;
  pid: number;
  body: string;
}

export interface Measurement {
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

export interface ShapeResult {
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

export async function benchShape(
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
