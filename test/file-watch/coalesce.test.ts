import { describe, expect, it } from 'vitest';
import { coalesced } from '../../src/file-watch/coalesce.js';

/** A task whose runs the test finishes by hand, one at a time. */
function manualTask() {
  const pending: { resolve: (n: number) => void; reject: (e: Error) => void }[] = [];
  let started = 0;
  const task = (): Promise<number> => {
    started += 1;
    return new Promise<number>((resolve, reject) => pending.push({ resolve, reject }));
  };
  const settle = async (how: 'resolve' | 'reject', value = started): Promise<void> => {
    const next = pending.shift();
    if (next === undefined) throw new Error('no run in progress');
    if (how === 'resolve') next.resolve(value);
    else next.reject(new Error(`run ${value} failed`));
    await new Promise((r) => setImmediate(r));
  };
  return { task, settle, started: () => started };
}

describe('coalesced', () => {
  it('runs one at a time, and a burst during a run shares one follow-up', async () => {
    const t = manualTask();
    const runs = coalesced(t.task);
    const first = runs.run();
    const burst = [runs.run(), runs.run(), runs.run()];
    expect(t.started()).toBe(1);
    await t.settle('resolve');
    expect(await first).toBe(1);
    expect(t.started()).toBe(2);
    await t.settle('resolve');
    expect(await Promise.all(burst)).toEqual([2, 2, 2]);
  });

  it('a failed run fails only its callers: its follow-up and later calls run afresh', async () => {
    const t = manualTask();
    const runs = coalesced(t.task);
    const failing = runs.run();
    const followUp = runs.run();
    await t.settle('reject');
    await expect(failing).rejects.toThrow('run 1 failed');
    expect(t.started()).toBe(2);
    await t.settle('resolve');
    expect(await followUp).toBe(2);
    const later = runs.run();
    await t.settle('resolve');
    expect(await later).toBe(3);
  });

  it('a task that throws synchronously rejects that run and leaves the runner usable', async () => {
    let calls = 0;
    const runs = coalesced(() => {
      calls += 1;
      if (calls === 1) throw new Error('sync');
      return Promise.resolve(calls);
    });
    await expect(runs.run()).rejects.toThrow('sync');
    expect(await runs.run()).toBe(2);
  });

  it('idle settles after a failed run instead of rejecting', async () => {
    const t = manualTask();
    const runs = coalesced(t.task);
    runs.run().catch(() => undefined);
    const idle = runs.idle();
    await t.settle('reject');
    await expect(idle).resolves.toBeUndefined();
  });
});
