/**
 * Normal admissions, kube-apiserver's stand-in, sent while a phase attacks or changes the server. They run in
 * a worker thread so the harness's own busy event loop (2,000 attacking sockets) does not show up as their
 * latency. Kept-alive connections are how kube-apiserver usually calls; a fresh connection per admission is
 * how it calls after a connection was closed, and is what a connection cap or a certificate swap would hurt.
 */
import { Worker } from 'node:worker_threads';
import type { Target } from './http.js';
import { median, quantile } from '../harness/quantiles.js';
import { Tally } from './tally.js';

export interface LoadSpec {
  port: number;
  ca: string;
  /** Concurrent admissions on kept-alive connections, each paced to one per `pauseMs`. */
  keptAlive: number;
  fresh: number;
  pauseMs: number;
  timeoutMs: number;
  /** Every answer must carry a patch (the example review injects) unless the config may be absent. */
  expectPatch: boolean;
}

export interface LoadReport {
  tried: number;
  ok: number;
  failed: [string, number][];
  lost: [string, number][];
  examples: string[];
  /** Answers holding sidecars of more than one config version. */
  mixed: number;
  versions: [string, number][];
  /** Milliseconds, sorted. */
  latencies: number[];
  /** Every admission, in the order sent: when (epochMs), how long it waited, and on which kind of connection. */
  timed: TimedAdmission[];
  fives: number;
}

export interface TimedAdmission {
  at: number;
  ms: number;
  fresh: boolean;
}

/** A clock the harness's threads share: each worker's performance.now() counts from its own start. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/** p99 of the admissions sent within [from, to) (epochMs), on fresh and on kept-alive connections. */
export interface Tail {
  fresh: { count: number; p99: number };
  keptAlive: { count: number; p99: number };
}

export function tailOf(report: LoadReport, from: number, to: number): Tail {
  const within = report.timed.filter((a) => a.at >= from && a.at < to);
  const p99 = (fresh: boolean): { count: number; p99: number } => {
    const sorted = within
      .filter((a) => a.fresh === fresh)
      .map((a) => a.ms)
      .sort((a, b) => a - b);
    return { count: sorted.length, p99: quantile(sorted, 0.99) };
  };
  return { fresh: p99(true), keptAlive: p99(false) };
}

export function describeTail(what: string, tail: Tail): string {
  return `${what}: fresh connections p99 ${tail.fresh.p99.toFixed(0)} ms (${tail.fresh.count}), kept-alive p99 ${tail.keptAlive.p99.toFixed(0)} ms (${tail.keptAlive.count})`;
}

/**
 * About 200 admissions a second, the rate of the soak in issue 10: four kept-alive loops and one that opens a
 * connection per admission, each paced to one admission per 25 ms.
 */
export function normalLoadSpec(target: Target, timeoutMs: number, expectPatch = true): LoadSpec {
  return { port: target.port, ca: target.ca.toString(), keptAlive: 4, fresh: 1, pauseMs: 25, timeoutMs, expectPatch };
}

export class NormalLoad {
  private readonly worker: Worker;
  private readonly report: Promise<LoadReport>;

  constructor(spec: LoadSpec) {
    this.worker = new Worker(new URL('./load-worker.js', import.meta.url), { workerData: spec });
    this.report = new Promise((resolve, reject) => {
      this.worker.once('message', (report: LoadReport) => resolve(report));
      this.worker.once('error', reject);
    });
  }

  /** Asks the loops to finish the admission each has in flight, and returns what they saw. */
  async stop(): Promise<LoadReport> {
    this.worker.postMessage('stop');
    const report = await this.report;
    await this.worker.terminate();
    return report;
  }
}

export function describeLoad(report: LoadReport): string[] {
  const failed = new Tally();
  failed.merge({ counts: report.failed });
  const lost = new Tally();
  lost.merge({ counts: report.lost });
  const sorted = report.latencies;
  const ms = (value: number | undefined): string => (value ?? Number.NaN).toFixed(0);
  const lines = [
    `normal admissions: ${report.tried} sent, ${report.ok} ok, ${failed.total} failed, ${lost.total} lost; waited p50 ${ms(median(sorted))} ms, p99 ${ms(quantile(sorted, 0.99))} ms, max ${ms(sorted.at(-1))} ms`,
  ];
  if (failed.total > 0) lines.push(`  failed: ${failed.summary()}`);
  if (lost.total > 0) lines.push(`  lost: ${lost.summary()}`);
  lines.push(...report.examples.map((line) => `    ${line}`));
  return lines;
}
