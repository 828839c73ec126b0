import { inspect, isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BackoffRateLimiter, type RateLimiter } from '../../../src/deliver/controller/rate-limiter.js';
import { WorkQueue, type ReconcileResult, type Run } from '../../../src/deliver/controller/work-queue.js';
import { ManualClock } from '../../support/manual-clock.js';
import { waitUntil } from '../../support/wait-until.js';

/**
 * The queue takes a finished run's result once the run's promise settles, a few turns of the event loop later:
 * a test waits, up to 2 s, for what it checks next, `probe` giving `expected` (compared as toEqual does). The
 * failure names the probe by its source.
 */
const until = <T>(probe: () => T, expected: T) =>
  waitUntil(probe, {
    what: `${probe.toString().replace(/^\(\) => /, '')} to be ${inspect(expected)}`,
    timeoutMs: 2000,
    intervalMs: 1,
    until: (value) => isDeepStrictEqual(value, expected),
  });

/** A reconcile the test finishes by hand: each run waits until the test settles it. */
class Runs {
  readonly started: string[] = [];
  /** What the queue told each run, in the order they started. */
  readonly told: Run[] = [];
  private readonly open = new Map<string, ((result: ReconcileResult) => void)[]>();
  work = (key: string, run: Run): Promise<ReconcileResult> => {
    this.started.push(key);
    this.told.push(run);
    return new Promise((resolve) => this.open.set(key, [...(this.open.get(key) ?? []), resolve]));
  };
  /** Ends the oldest open run of `key` with `result`; the queue takes it a little later (see `until`). */
  finish(key: string, result: ReconcileResult = { kind: 'done' }): void {
    const waiting = this.open.get(key) ?? [];
    const next = waiting.shift();
    if (next === undefined) throw new Error(`${key} is not running`);
    next(result);
  }
  running(): string[] {
    return [...this.open.entries()].filter(([, w]) => w.length > 0).map(([k]) => k);
  }
}

function queue(options: { concurrency?: number; backgroundSlots?: number } = {}) {
  const clock = new ManualClock();
  const runs = new Runs();
  const retries: [string, number][] = [];
  // The keys the queue made the limiter forget, in order: a run that ended in `done` was taken.
  const forgotten: string[] = [];
  const backoff = new BackoffRateLimiter({ minMs: 100, maxMs: 1000 }, () => 1);
  const limiter: RateLimiter = {
    when: (key) => backoff.when(key),
    failures: (key) => backoff.failures(key),
    forget: (key) => {
      forgotten.push(key);
      backoff.forget(key);
    },
    clear: () => backoff.clear(),
  };
  const q = new WorkQueue({
    concurrency: options.concurrency ?? 2,
    backgroundSlots: options.backgroundSlots ?? 1,
    limiter,
    clock,
    work: runs.work,
    onBug: () => undefined,
    onRetry: (key, ms) => retries.push([key, ms]),
  });
  return { clock, runs, q, retries, forgotten };
}

describe('WorkQueue', () => {
  it('never runs one key twice at once: a change during a run runs it once more after', async () => {
    const { runs, q } = queue();
    q.add('a');
    q.add('a');
    expect(runs.started).toEqual(['a']);
    q.add('a');
    q.add('a');
    runs.finish('a');
    await until(() => runs.started, ['a', 'a']);
    runs.finish('a');
    await until(() => q.busy(), false);
    expect(runs.started).toEqual(['a', 'a']);
  });

  it('runs at most `concurrency` keys at once, in the order they came', async () => {
    const { runs, q } = queue({ concurrency: 2 });
    for (const key of ['a', 'b', 'c', 'd']) q.add(key);
    expect(runs.running()).toEqual(['a', 'b']);
    expect(q.figures().depth).toBe(2);
    runs.finish('a');
    await until(() => runs.running(), ['b', 'c']);
  });

  it('backs a failing key off, doubling, and a success forgets its failures', async () => {
    const { clock, runs, q, retries } = queue();
    q.add('a');
    runs.finish('a', { kind: 'retry' });
    await until(() => clock.pending(), [100]);
    clock.advance(100);
    expect(runs.started).toEqual(['a', 'a']);
    runs.finish('a', { kind: 'retry' });
    await until(() => retries.map(([, ms]) => ms), [100, 200]);
    clock.advance(200);
    runs.finish('a');
    await until(() => q.busy(), false);
    // A success resets the count: the next failure waits the minimum again.
    q.add('a');
    runs.finish('a', { kind: 'retry' });
    await until(() => retries.map(([, ms]) => ms), [100, 200, 100]);
    expect(runs.told.map((run) => run.early)).toEqual([false, false, false, false]);
  });

  it('runs a key that changes during its wait at once, early: keep-waiting leaves the wait and the count', async () => {
    const { clock, runs, q, retries } = queue();
    q.add('a');
    runs.finish('a', { kind: 'retry' });
    await until(() => clock.pending(), [100]);
    q.add('a');
    expect(runs.started).toEqual(['a', 'a']);
    expect(runs.told[1]?.early).toBe(true);
    runs.finish('a', { kind: 'keep-waiting' });
    await until(() => q.busy(), false);
    expect(clock.pending()).toEqual([100]);
    // The wait ends: the run is not early, and its failure is the second in a row.
    clock.advance(100);
    expect(runs.told[2]?.early).toBe(false);
    runs.finish('a', { kind: 'retry' });
    await until(() => retries.map(([, ms]) => ms), [100, 200]);
  });

  it('ends the wait of an early run that acts: done drops it, another failure waits anew', async () => {
    const { clock, runs, q, forgotten } = queue();
    q.add('a');
    runs.finish('a', { kind: 'requeue-after', ms: 700 });
    await until(() => clock.pending(), [700]);
    q.add('a');
    runs.finish('a', { kind: 'retry' });
    await until(() => clock.pending(), [100]);
    q.add('a');
    runs.finish('a');
    await until(() => forgotten, ['a', 'a']);
    expect(clock.pending()).toEqual([]);
    expect(runs.told.map((run) => run.early)).toEqual([false, true, true]);
  });

  it('runs a key that changed during a run that ended in a wait again at once, early', async () => {
    const { clock, runs, q } = queue();
    q.add('a');
    q.add('a');
    runs.finish('a', { kind: 'retry' });
    await until(() => runs.started, ['a', 'a']);
    expect(runs.told[1]?.early).toBe(true);
    expect(clock.pending()).toEqual([100]);
  });

  it('tells a run when its key was first queued since the last run began', async () => {
    const { clock, runs, q } = queue();
    q.add('a');
    clock.advance(100);
    q.add('a');
    clock.advance(100);
    q.add('a');
    runs.finish('a');
    await until(() => runs.started, ['a', 'a']);
    expect(runs.told.map((run) => run.since)).toEqual([5_000, 5_100]);
  });

  it('keeps slots for changes: retries hold at most backgroundSlots', async () => {
    const { clock, runs, q, forgotten } = queue({ concurrency: 2, backgroundSlots: 1 });
    q.add('r1');
    q.add('r2');
    runs.finish('r1', { kind: 'retry' });
    runs.finish('r2', { kind: 'retry' });
    await until(() => clock.pending(), [100, 100]);
    clock.advance(100);
    // Both are due, yet only one retry runs: the other slot is for a change.
    expect(runs.running()).toEqual(['r1']);
    q.add('claim');
    expect(runs.running()).toEqual(['r1', 'claim']);
    runs.finish('claim');
    await until(() => forgotten, ['claim']);
    expect(runs.running()).toEqual(['r1']);
    runs.finish('r1');
    await until(() => runs.running(), ['r2']);
  });

  it('runs the front before the background, which holds at most backgroundSlots, whatever came first', async () => {
    const { runs, q } = queue({ concurrency: 3, backgroundSlots: 1 });
    for (const key of ['pool-1', 'pool-2', 'pool-3']) q.add(key, 'background');
    expect(runs.running()).toEqual(['pool-1']);
    q.add('claim-1');
    q.add('claim-2');
    q.add('claim-3');
    expect(runs.running()).toEqual(['pool-1', 'claim-1', 'claim-2']);
    runs.finish('pool-1');
    // A free slot goes to the claim still queued, not to the pool's next key.
    await until(() => runs.running(), ['claim-1', 'claim-2', 'claim-3']);
    runs.finish('claim-1');
    await until(() => runs.running(), ['claim-2', 'claim-3', 'pool-2']);
  });

  it('moves a queued background key to the front when it changes for the front, and not back', async () => {
    const { runs, q } = queue({ concurrency: 2, backgroundSlots: 1 });
    q.add('pool-1', 'background');
    q.add('pool-2', 'background');
    q.add('pool-3', 'background');
    q.add('pool-3');
    q.add('pool-3', 'background');
    expect(runs.running()).toEqual(['pool-1', 'pool-3']);
    // A change for the front during a run sends the rerun to the front too.
    q.add('pool-1');
    runs.finish('pool-3');
    runs.finish('pool-1');
    await until(() => runs.running(), ['pool-1', 'pool-2']);
  });

  it('runs a key again after requeue-after, without counting a failure', async () => {
    const { clock, runs, q, retries } = queue();
    q.add('a');
    runs.finish('a', { kind: 'requeue-after', ms: 700 });
    await until(() => clock.pending(), [700]);
    clock.advance(700);
    expect(runs.started).toEqual(['a', 'a']);
    expect(retries).toEqual([]);
  });

  it('waits for a change after done', async () => {
    const { clock, runs, q } = queue();
    q.add('a');
    runs.finish('a', { kind: 'done' });
    await until(() => q.busy(), false);
    expect(clock.pending()).toEqual([]);
    q.add('a');
    expect(runs.started).toEqual(['a', 'a']);
  });

  it('treats a reconcile that throws as a failure', async () => {
    const clock = new ManualClock();
    const bugs: string[] = [];
    let retried: (waitMs: number) => void = () => undefined;
    const retry = new Promise<number>((resolve) => (retried = resolve));
    const q = new WorkQueue({
      concurrency: 1,
      backgroundSlots: 1,
      limiter: new BackoffRateLimiter({ minMs: 100, maxMs: 1000 }, () => 1),
      clock,
      work: () => Promise.reject(new Error('boom')),
      onBug: (key) => bugs.push(key),
      onRetry: (_key, waitMs) => retried(waitMs),
    });
    q.add('a');
    expect(await retry).toBe(100);
    expect(bugs).toEqual(['a']);
    expect(clock.pending()).toEqual([100]);
  });

  it('clear drops what waits; stop takes nothing new and resolves once the runs end', async () => {
    const { clock, runs, q } = queue();
    q.add('a');
    q.add('b');
    q.add('c');
    clock.advance(1000);
    runs.finish('b', { kind: 'retry' });
    await until(() => runs.running(), ['a', 'c']);
    expect(clock.pending()).toEqual([100]);
    q.clear();
    expect(clock.pending()).toEqual([]);
    expect(q.figures().depth).toBe(0);
    let stopped = false;
    const stopping = q.stop().then(() => (stopped = true));
    q.add('d');
    runs.finish('a');
    // Only c runs, which started a second after a.
    await until(() => q.figures().longestRunningSeconds, 0);
    expect(stopped).toBe(false);
    runs.finish('c', { kind: 'retry' });
    await until(() => stopped, true);
    await stopping;
    expect(stopped).toBe(true);
    expect(runs.started).toEqual(['a', 'b', 'c']);
    expect(clock.pending()).toEqual([]);
  });

  it('reports the age of the oldest queued key and of the longest run', () => {
    const { clock, q } = queue({ concurrency: 1 });
    q.add('a');
    clock.advance(1500);
    q.add('b');
    clock.advance(500);
    expect(q.figures()).toEqual({ depth: 1, oldestQueuedSeconds: 0.5, longestRunningSeconds: 2 });
  });
});
