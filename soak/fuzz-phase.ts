/**
 * The fuzz phase: SOAK_FUZZ_REQUESTS fuzzed requests over several keep-alive connections in parallel.
 *
 * failed: a 5xx, a 200 that is not the request's own review answer or whose patch does not apply strictly,
 *         a body with a stack frame or a file path;
 * lost:   a connection error on a request the server should have answered (a request over the limits may
 *         be refused by closing the connection; that is counted apart, as refused).
 */
import { Worker } from 'node:worker_threads';
import type { Agent } from 'node:https';
import { checkReviewAnswer, errorShape, leakIn, type Verdict } from './check.js';
import type { DeepJob } from './check-worker.js';
import { Fuzzer, type FuzzCase } from './fuzz.js';
import { exchange, keepAliveAgent, type Outcome } from './http.js';
import type { SoakOptions } from './options.js';
import { ROOT } from '../harness/repo.js';
import { probeBodyLimit } from './raw.js';
import { fuzzSeeds } from './reviews.js';
import { Session, type PhaseResult } from './session.js';
import { Tally } from './tally.js';

const REQUEST_TIMEOUT_MS = 30_000;
const PROGRESS_EVERY_MS = 15_000;
const DEEP_CHECK_TIMEOUT_MS = 60_000;
/** The server's limit before issue 10; used only if probing finds none. */
const FALLBACK_BODY_LIMIT = 8 * 1024 * 1024;

/** One heavy case in flight at a time; the queue is short because heavy cases are rare. */
class Mutex {
  private tail: Promise<void> = Promise.resolve();
  async run<T>(work: () => Promise<T>): Promise<T> {
    const previous = this.tail;
    let release = (): void => undefined;
    this.tail = new Promise((resolve) => (release = resolve));
    await previous;
    try {
      return await work();
    } finally {
      release();
    }
  }
}

/** Answers too deep for the main thread's stack, checked in a thread with a 256 MiB one. */
class DeepChecker {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, (verdict: Verdict) => void>();
  private next = 0;

  check(sent: Buffer, answer: Buffer): Promise<Verdict> {
    this.worker ??= this.start();
    const id = (this.next += 1);
    const job: DeepJob = { id, sent, answer };
    return new Promise((resolve) => {
      // A check that never returns is reported as unchecked rather than holding the phase.
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve({ deep: true });
      }, DEEP_CHECK_TIMEOUT_MS);
      this.waiting.set(id, (verdict) => {
        clearTimeout(timer);
        resolve(verdict);
      });
      this.worker?.postMessage(job);
    });
  }

  private start(): Worker {
    const worker = new Worker(new URL('./check-worker.js', import.meta.url), { resourceLimits: { stackSizeMb: 256 } });
    worker.on('message', ({ id, verdict }: { id: number; verdict: Verdict }) => {
      this.waiting.get(id)?.(verdict);
      this.waiting.delete(id);
    });
    worker.on('error', (error: Error) => {
      for (const resolve of this.waiting.values())
        resolve({ ok: false, reason: `deep check worker failed: ${error.message}` });
      this.waiting.clear();
      this.worker = undefined;
    });
    return worker;
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
  }
}

export async function fuzzPhase(session: Session, options: SoakOptions, workDir: string): Promise<PhaseResult> {
  const { target, server } = session;
  const notes: string[] = [];
  const probed = await probeBodyLimit(target);
  const bodyLimit = probed?.limit ?? FALLBACK_BODY_LIMIT;
  notes.push(
    probed === undefined
      ? `body limit: none found, ${FALLBACK_BODY_LIMIT} assumed`
      : `body limit: ${bodyLimit} bytes (${probed.how})`,
  );

  const fuzzer = new Fuzzer(fuzzSeeds(), options.seed, bodyLimit);
  const deep = new DeepChecker();
  const heavy = new Mutex();
  const statuses = new Tally();
  const kinds = new Tally();
  const failed = new Tally();
  const lost = new Tally();
  const refused = new Tally();
  const shapes = new Tally();
  const limits = new Tally();
  const deepChecks = { checked: 0, skipped: 0 };
  let fives = 0;
  let connections = 0;
  let patchesApplied = 0;
  let next = 0;
  let done = 0;
  const deadline = performance.now() + options.fuzzMaxSeconds * 1000;
  const places = [ROOT, workDir];
  const describe = (c: FuzzCase, extra: string): string => `case #${c.n} (${c.kind}) ${extra}`.slice(0, 300);

  const judge = async (c: FuzzCase, outcome: Outcome, previous: string): Promise<void> => {
    kinds.add(c.kind);
    if (!outcome.reused) connections += 1;
    if (outcome.kind === 'error') {
      statuses.add('no answer');
      if (c.oversize) refused.add(`${outcome.error} on ${c.kind}`);
      else
        lost.add(
          `${outcome.error} on a ${outcome.reused ? 'reused' : 'new'} connection, after ${previous}`,
          describe(c, ''),
        );
      return;
    }
    statuses.add(String(outcome.status));
    const text = outcome.body.toString('utf8');
    if (outcome.status >= 500) {
      fives += 1;
      const retry = outcome.headers['retry-after'] === undefined ? '' : ' with Retry-After';
      failed.add(`${outcome.status}${retry}`, describe(c, text.slice(0, 200)));
    }
    const leak = leakIn(text, places);
    if (leak !== undefined) failed.add(`body shows ${leak}`, describe(c, text.slice(0, 200)));
    if (c.limit === 'above' && outcome.status !== 413) limits.add(`one byte over the limit answered ${outcome.status}`);
    if (c.limit !== undefined && c.limit !== 'above' && outcome.status === 413)
      limits.add(`${c.limit} the limit answered 413`);
    if (outcome.status !== 200) {
      // A HEAD answer has no body by definition; its shape says nothing.
      if (c.spec.method !== 'HEAD') shapes.add(`${outcome.status} ${errorShape(outcome.body)}`);
      return;
    }
    if (c.spec.method !== 'POST' || !c.spec.path.startsWith('/mutate')) return;
    const body = Buffer.from(c.spec.body ?? '');
    let verdict = checkReviewAnswer(body, outcome.body);
    if ('deep' in verdict) {
      verdict = await deep.check(body, outcome.body);
      if ('deep' in verdict) deepChecks.skipped += 1;
      else deepChecks.checked += 1;
    }
    if ('ok' in verdict && !verdict.ok) failed.add(verdict.reason, describe(c, text.slice(0, 200)));
    if ('ok' in verdict && verdict.ok && verdict.patched) patchesApplied += 1;
  };

  const loop = async (agent: Agent): Promise<void> => {
    let previous = 'no request';
    while (next < options.fuzzRequests && performance.now() < deadline && server.alive) {
      const c = fuzzer.caseAt(next);
      next += 1;
      const send = (): Promise<Outcome> => exchange(target, agent, c.spec, REQUEST_TIMEOUT_MS);
      const outcome = c.heavy ? await heavy.run(send) : await send();
      if (!server.alive) break;
      await judge(c, outcome, previous);
      previous = outcome.kind === 'answer' ? `a ${outcome.status}` : outcome.error;
      done += 1;
    }
  };

  const started = performance.now();
  const progress = setInterval(() => {
    const seconds = (performance.now() - started) / 1000;
    process.stderr.write(
      `  fuzz: ${done}/${options.fuzzRequests} in ${seconds.toFixed(0)} s (${(done / seconds).toFixed(0)}/s), failed ${failed.total}, lost ${lost.total}\n`,
    );
  }, PROGRESS_EVERY_MS);
  const agents = Array.from({ length: options.fuzzConnections }, () => keepAliveAgent(target));
  try {
    await Promise.all(agents.map(loop));
  } finally {
    clearInterval(progress);
    for (const agent of agents) agent.destroy();
    await deep.close();
  }

  const seconds = (performance.now() - started) / 1000;
  notes.push(
    `${done} requests in ${seconds.toFixed(0)} s (${(done / seconds).toFixed(0)}/s) from ${options.fuzzConnections} keep-alive clients, on ${connections} connections (the server closes some after an error), seed ${options.seed} (${fuzzer.sweepSize} of them, interleaved: every path of every seed x every wrong type)`,
    `cases: ${kinds.summary(20)}`,
    `answers: ${statuses.summary(20)}`,
    `patches applied strictly: ${patchesApplied}; too deep for the main thread and checked with a 256 MiB stack: ${deepChecks.checked}; too deep even for that, unchecked: ${deepChecks.skipped}`,
    `refused by closing (requests over the limits): ${refused.total}${refused.total > 0 ? ` (${refused.summary(5)})` : ''}`,
    `error answer shapes: ${shapes.summary(12)}`,
  );
  if (limits.total > 0) notes.push(`at the body limit: ${limits.summary()}`);
  if (failed.total > 0) notes.push(`failed: ${failed.summary()}`, ...failed.exampleLines());
  if (lost.total > 0) notes.push(`lost: ${lost.summary()}`, ...lost.exampleLines());
  const broken: string[] = [];
  const nonFive = failed.total - fives;
  if (nonFive > 0)
    broken.push(
      `fuzz: ${nonFive} wrong answers (${[...failed.counts.keys()].filter((k) => !/^5\d\d/.test(k)).join('; ')})`,
    );
  return session.close('fuzz', {
    tried: done,
    failed: failed.total,
    lost: lost.total,
    fives,
    normalLost: 0,
    completed: done >= options.fuzzRequests,
    notes,
    broken,
  });
}
