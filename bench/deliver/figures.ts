/**
 * The delivery bench's figures, from what it saw of each claim: the requests its envd double answered (when
 * .env_ready was in place), kube-apiserver's audit time of the claim recorded, deliver-env's log line (when it
 * saw the claim) and the app's own start time; and the lines it prints of them.
 */
import type { EnvdDouble } from '../../test/support/envd-double.js';
import { readAuditEvents } from '../../test/e2e/support/audit-log.js';
import { quantile } from '../../harness/quantiles.js';
import { burstCpuLine, perClaimLine, type BurstCpuResult } from './burst-cpu.js';
import { NS } from './sandboxes.js';

/** The listing, one upload of both files and two Moves, and the wake when a wrapper waits (docs/deliver-env.md). */
const REQUESTS_PER_CLAIM = 5;

/**
 * How many requests each double had answered when its claim went out: a new term first looks into every
 * unclaimed pod (to clear what an earlier claim left), and that look is not part of the claim's delivery.
 */
const beforeClaim = new Map<EnvdDouble, number>();

/** Marks a double's claim as going out now: the requests it answers from here on are the delivery's. */
export function claimSent(double: EnvdDouble): void {
  beforeClaim.set(double, double.requests.length);
}

/** The requests a double answered since its claim went out. */
function claimRequests(double: EnvdDouble): EnvdDouble['requests'] {
  return double.requests.slice(beforeClaim.get(double) ?? 0);
}

/** When .env_ready was in place: its upload answered, or its Move answered. */
export function readyAt(double: EnvdDouble): number | undefined {
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
export function seenTimes(log: string): Map<string, number> {
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

/** When kube-apiserver recorded each claim, by Sandbox: the audit log's time of its PATCH. */
export function recordedTimes(auditLog: string): Map<string, number> {
  const recordedAt = new Map<string, number>();
  for (const event of readAuditEvents(auditLog)) {
    const name = event.objectRef?.name;
    if (event.verb === 'patch' && name !== undefined && event.stageTimestamp !== undefined)
      recordedAt.set(name, Date.parse(event.stageTimestamp));
  }
  return recordedAt;
}

/** What the bench saw of the claims, by index: the first `serial` were claimed one at a time, the rest at once. */
export interface Claims {
  allNames: readonly string[];
  doubles: readonly EnvdDouble[];
  serial: number;
  appStarts: readonly number[];
  sentAt: ReadonlyMap<string, number>;
  patchedAt: ReadonlyMap<string, number>;
  recordedAt: ReadonlyMap<string, number>;
  seenBy: ReadonlyMap<string, number>;
  burst: BurstCpuResult;
}

/** Prints the claims' figures against their targets, then all of them as one JSON line. */
export function reportClaims(claims: Claims): void {
  const { allNames, doubles, serial, appStarts, sentAt, patchedAt, recordedAt, seenBy, burst } = claims;
  const count = allNames.length - serial;
  const serialNames = allNames.slice(0, serial);
  const names = allNames.slice(serial);
  const atOnce = doubles.slice(serial);
  const latencies = names
    .map((name, i) => (readyAt(atOnce[i] as EnvdDouble) ?? 0) - (sentAt.get(name) ?? 0))
    .sort((a, b) => a - b);
  const requests = atOnce.reduce((sum, d) => sum + claimRequests(d).length, 0);
  const fromRecorded = names
    .map((name, i) => (readyAt(atOnce[i] as EnvdDouble) ?? 0) - (recordedAt.get(name) ?? 0))
    .sort((a, b) => a - b);
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
  const atOnceSplit = splitOf(names.map((_, i) => serial + i));
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
    sandboxes: count,
    p50Ms: quantile(fromRecorded, 0.5),
    p99Ms: quantile(fromRecorded, 0.99),
    maxMs: fromRecorded.at(-1),
    sentP50Ms: quantile(latencies, 0.5),
    sentP99Ms: quantile(latencies, 0.99),
    requestsPerDelivery: requests / count,
    claimAcceptedP50Ms: quantile(patching, 0.5),
    claimAcceptedP99Ms: quantile(patching, 0.99),
    acceptedToReadyP50Ms: quantile(afterPatch, 0.5),
    acceptedToReadyP99Ms: quantile(afterPatch, 0.99),
    acceptedToFirstRequestP50Ms: quantile(toFirstRequest, 0.5),
    acceptedToFirstRequestP99Ms: quantile(toFirstRequest, 0.99),
    envdRequestsP50Ms: quantile(envdPhase, 0.5),
    envdRequestsP99Ms: quantile(envdPhase, 0.99),
    targetMet: quantile(fromRecorded, 0.99) < 1000 && requests / count <= REQUESTS_PER_CLAIM,
    // The controller's own histogram counts from the claim-timestamp, which the claimer sets as it sends.
    targetMetFromSent: quantile(latencies, 0.99) < 1000 && requests / count <= REQUESTS_PER_CLAIM,
    appStartSerial: summary(serialSplit),
    appStartAtOnce: summary(atOnceSplit),
    burstCpu: burst,
    appStartTargetMet:
      summary(serialSplit).p50Ms <= 50 && summary(serialSplit).p99Ms <= 150 && summary(atOnceSplit).p99Ms <= 500,
  };
  process.stdout.write(
    `deliver-env: ${count} Sandboxes claimed at once, claim annotation recorded (kube-apiserver's audit time) -> .env_ready written\n`,
  );
  process.stdout.write(
    `  p50 ${result.p50Ms} ms   p99 ${result.p99Ms} ms   max ${result.maxMs} ms   ${result.requestsPerDelivery} envd requests per delivery\n`,
  );
  process.stdout.write(
    `  from the claim sent instead (adds kube-apiserver taking ${count} writes at once): p50 ${result.sentP50Ms} ms, p99 ${result.sentP99Ms} ms\n`,
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
  process.stdout.write(splitLine(`${serial} claims one at a time`, serialSplit));
  process.stdout.write(splitLine(`${count} claims at once`, atOnceSplit));
  process.stdout.write(burstCpuLine(burst));
  process.stdout.write(perClaimLine(burst, count));
  process.stdout.write(
    `  target (one at a time p50 <= 50 ms and p99 <= 150 ms, at once p99 <= 500 ms): ${result.appStartTargetMet ? 'met' : 'NOT met'}\n`,
  );
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
