import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/deliver/backoff.js';
import { WorkQueue, type ReconcileResult } from '../../src/deliver/work-queue.js';
import { FakeClock } from './fake-clock.js';

/** A reconcile the test finishes by hand: each run waits until the test settles it. */
class Runs {
  readonly started: string[] = [];
  private readonly open = new Map<string, ((result: ReconcileResult) => void)[]>();
  work = (key: string): Promise<ReconcileResult> => {
    this.started.push(key);
    return new Promise((resolve) => this.open.set(key, [...(this.open.get(key) ?? []), resolve]));
  };
  async finish(key: string, result: ReconcileResult = { kind: 'done' }): Promise<void> {
    const waiting = this.open.get(key) ?? [];
    const next = waiting.shift();
    if (next === undefined) throw new Error(`${key} is not running`);
    next(result);
    for (let i = 0; i < 5; i += 1) await Promise.resolve();
  }
  running(): string[] {
    return [...this.open.entries()].filter(([, w]) => w.length > 0).map(([k]) => k);
  }
}

function queue(options: { concurrency?: number; backgroundSlots?: number } = {}) {
  const clock = new FakeClock();
  const runs = new Runs();
  const retries: [string, number][] = [];
  const q = new WorkQueue({
    concurrency: options.concurrency ?? 2,
    backgroundSlots: options.backgroundSlots ?? 1,
    backoff: { minMs: 100, maxMs: 1000 },
    random: () => 1,
    clock,
    work: runs.work,
    onBug: () => undefined,
    onRetry: (key, ms) => retries.push([key, ms]),
  });
  return { clock, runs, q, retries };
}

describe('WorkQueue', () => {
  it('never runs one key twice at once: a change during a run runs it once more after', async () => {
    const { runs, q } = queue();
    q.add('a');
    q.add('a');
    expect(runs.started).toEqual(['a']);
    q.add('a');
    q.add('a');
    await runs.finish('a');
    expect(runs.started).toEqual(['a', 'a']);
    await runs.finish('a');
    expect(runs.started).toEqual(['a', 'a']);
    expect(q.busy()).toBe(false);
  });

  it('runs at most `concurrency` keys at once, in the order they came', async () => {
    const { runs, q } = queue({ concurrency: 2 });
    for (const key of ['a', 'b', 'c', 'd']) q.add(key);
    expect(runs.running()).toEqual(['a', 'b']);
    expect(q.figures().depth).toBe(2);
    await runs.finish('a');
    expect(runs.running()).toEqual(['b', 'c']);
  });

  it('backs a failing key off, doubling, and a change does not skip the wait', async () => {
    const { clock, runs, q, retries } = queue();
    q.add('a');
    await runs.finish('a', { kind: 'retry' });
    expect(clock.pending()).toEqual([100]);
    q.add('a');
    expect(runs.started).toEqual(['a']);
    clock.advance(100);
    expect(runs.started).toEqual(['a', 'a']);
    await runs.finish('a', { kind: 'retry' });
    expect(retries.map(([, ms]) => ms)).toEqual([100, 200]);
    clock.advance(200);
    await runs.finish('a');
    // A success resets the count: the next failure waits the minimum again.
    q.add('a');
    await runs.finish('a', { kind: 'retry' });
    expect(retries.map(([, ms]) => ms)).toEqual([100, 200, 100]);
  });

  it('runs a key whose inputs changed at once with addNow, even during its backoff or its run', async () => {
    const { clock, runs, q } = queue();
    q.add('a');
    await runs.finish('a', { kind: 'retry' });
    q.addNow('a');
    expect(runs.started).toEqual(['a', 'a']);
    expect(clock.pending()).toEqual([]);
    q.addNow('a');
    await runs.finish('a', { kind: 'retry' });
    expect(runs.started).toEqual(['a', 'a', 'a']);
  });

  it('keeps slots for changes: retries hold at most backgroundSlots', async () => {
    const { clock, runs, q } = queue({ concurrency: 2, backgroundSlots: 1 });
    q.add('r1');
    q.add('r2');
    await runs.finish('r1', { kind: 'retry' });
    await runs.finish('r2', { kind: 'retry' });
    clock.advance(100);
    // Both are due, yet only one retry runs: the other slot is for a change.
    expect(runs.running()).toEqual(['r1']);
    q.add('claim');
    expect(runs.running()).toEqual(['r1', 'claim']);
    await runs.finish('claim');
    expect(runs.running()).toEqual(['r1']);
    await runs.finish('r1');
    expect(runs.running()).toEqual(['r2']);
  });

  it('runs the front before the background, which holds at most backgroundSlots, whatever came first', async () => {
    const { runs, q } = queue({ concurrency: 3, backgroundSlots: 1 });
    for (const key of ['pool-1', 'pool-2', 'pool-3']) q.add(key, 'background');
    expect(runs.running()).toEqual(['pool-1']);
    q.add('claim-1');
    q.add('claim-2');
    q.add('claim-3');
    expect(runs.running()).toEqual(['pool-1', 'claim-1', 'claim-2']);
    await runs.finish('pool-1');
    // A free slot goes to the claim still queued, not to the pool's next key.
    expect(runs.running()).toEqual(['claim-1', 'claim-2', 'claim-3']);
    await runs.finish('claim-1');
    expect(runs.running()).toEqual(['claim-2', 'claim-3', 'pool-2']);
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
    await runs.finish('pool-3');
    await runs.finish('pool-1');
    expect(runs.running()).toEqual(['pool-1', 'pool-2']);
  });

  it('runs a key again after requeue-after, without counting a failure', async () => {
    const { clock, runs, q, retries } = queue();
    q.add('a');
    await runs.finish('a', { kind: 'requeue-after', ms: 700 });
    expect(clock.pending()).toEqual([700]);
    clock.advance(700);
    expect(runs.started).toEqual(['a', 'a']);
    expect(retries).toEqual([]);
  });

  it('waits for a change after wait-for-change', async () => {
    const { clock, runs, q } = queue();
    q.add('a');
    await runs.finish('a', { kind: 'wait-for-change' });
    expect(clock.pending()).toEqual([]);
    q.add('a');
    expect(runs.started).toEqual(['a', 'a']);
  });

  it('treats a reconcile that throws as a failure', async () => {
    const clock = new FakeClock();
    const bugs: string[] = [];
    const q = new WorkQueue({
      concurrency: 1,
      backgroundSlots: 1,
      backoff: { minMs: 100, maxMs: 1000 },
      random: () => 1,
      clock,
      work: () => Promise.reject(new Error('boom')),
      onBug: (key) => bugs.push(key),
    });
    q.add('a');
    await q.idle();
    expect(bugs).toEqual(['a']);
    expect(clock.pending()).toEqual([100]);
  });

  it('clear drops what waits; stop takes nothing new and resolves once the runs end', async () => {
    const { clock, runs, q } = queue();
    q.add('a');
    q.add('b');
    q.add('c');
    await runs.finish('b', { kind: 'retry' });
    q.clear();
    expect(clock.pending()).toEqual([]);
    expect(q.figures().depth).toBe(0);
    let stopped = false;
    const stopping = q.stop().then(() => (stopped = true));
    q.add('d');
    await runs.finish('a');
    expect(stopped).toBe(false);
    await runs.finish('c', { kind: 'retry' });
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

describe('backoffDelay', () => {
  const settings = { minMs: 100, maxMs: 1000 };
  it('doubles from the minimum, is capped, and jitters within the upper half', () => {
    expect([1, 2, 3, 4, 5, 40].map((n) => backoffDelay(n, settings, () => 1))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect([1, 2, 5].map((n) => backoffDelay(n, settings, () => 0))).toEqual([50, 100, 500]);
  });
});
