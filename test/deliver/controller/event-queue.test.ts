import { describe, expect, it } from 'vitest';
import { eventQueue } from '../../../src/deliver/controller/event-queue.js';
import { ManualClock } from '../../support/manual-clock.js';

/** A queue whose sends are recorded and finish when the test says so. */
function setup(options: { busy?: () => boolean; concurrency?: number; limit?: number } = {}) {
  const clock = new ManualClock();
  const sent: string[] = [];
  const finish: (() => void)[] = [];
  let dropped = 0;
  const queue = eventQueue({
    concurrency: options.concurrency ?? 2,
    limit: options.limit ?? 100,
    busy: options.busy ?? (() => false),
    maxHoldMs: 1000,
    clock,
    onDropped: () => (dropped += 1),
    onError: () => undefined,
  });
  const push = (name: string): void =>
    queue.push(
      () =>
        new Promise<void>((resolve) => {
          sent.push(name);
          finish.push(resolve);
        }),
    );
  const settle = async (): Promise<void> => {
    for (const done of finish.splice(0)) done();
    for (let i = 0; i < 5; i += 1) await Promise.resolve();
  };
  return { clock, queue, sent, push, settle, dropped: () => dropped };
}

describe('eventQueue', () => {
  it('sends at once while no delivery is busy, a few at a time', async () => {
    const q = setup();
    for (const name of ['a', 'b', 'c']) q.push(name);
    expect(q.sent).toEqual(['a', 'b']);
    await q.settle();
    expect(q.sent).toEqual(['a', 'b', 'c']);
  });

  it('holds Events while deliveries are busy, and sends them once the deliveries are done', () => {
    let busy = true;
    const q = setup({ busy: () => busy });
    q.push('a');
    expect(q.sent).toEqual([]);
    q.clock.fire();
    expect(q.sent).toEqual([]);
    busy = false;
    q.clock.fire();
    expect(q.sent).toEqual(['a']);
  });

  it('holds no Event longer than maxHoldMs, however long the deliveries stay busy', () => {
    const q = setup({ busy: () => true });
    q.push('a');
    let waited = 0;
    while (q.sent.length === 0 && waited < 10_000) {
      const before = q.clock.monotonic();
      q.clock.fire();
      waited += q.clock.monotonic() - before;
    }
    expect(q.sent).toEqual(['a']);
    expect(waited).toBe(1000);
  });

  it('sends what is held at once when drained, and resolves when all went out', async () => {
    const q = setup({ busy: () => true });
    q.push('a');
    q.push('b');
    let drained = false;
    const done = q.queue.drained().then(() => (drained = true));
    expect(q.sent).toEqual(['a', 'b']);
    expect(drained).toBe(false);
    await q.settle();
    await done;
    expect(drained).toBe(true);
  });

  it('drops the oldest past its limit, and counts it', () => {
    const q = setup({ busy: () => true, limit: 2 });
    for (const name of ['a', 'b', 'c']) q.push(name);
    expect(q.dropped()).toBe(1);
    void q.queue.drained();
    expect(q.sent).toEqual(['b', 'c']);
  });
});
