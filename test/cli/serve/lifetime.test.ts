/** The one owner of what `serve` must close (src/cli/serve/lifetime.ts). */
import { describe, expect, it } from 'vitest';
import { Lifetime } from '../../../src/cli/serve/lifetime.js';

describe('Lifetime', () => {
  it('closes the last registered first', async () => {
    const lifetime = new Lifetime();
    const closed: string[] = [];
    lifetime.onClose(() => void closed.push('certificates'));
    lifetime.onClose(async () => {
      await Promise.resolve();
      closed.push('config watch');
    });
    lifetime.onClose(() => void closed.push('app'));
    await lifetime.close();
    expect(closed).toEqual(['app', 'config watch', 'certificates']);
  });

  it('waits for each closer before the next', async () => {
    const lifetime = new Lifetime();
    const events: string[] = [];
    let finishApp: () => void = () => undefined;
    lifetime.onClose(() => void events.push('watch closed'));
    lifetime.onClose(
      () =>
        new Promise<void>((resolve) => {
          events.push('app closing');
          finishApp = () => {
            events.push('app closed');
            resolve();
          };
        }),
    );
    const closing = lifetime.close();
    await Promise.resolve();
    expect(events).toEqual(['app closing']);
    finishApp();
    await closing;
    expect(events).toEqual(['app closing', 'app closed', 'watch closed']);
  });

  it('closes once, however often close() is called', async () => {
    const lifetime = new Lifetime();
    let closes = 0;
    lifetime.onClose(() => void (closes += 1));
    const first = lifetime.close();
    expect(lifetime.close()).toBe(first);
    await first;
    await lifetime.close();
    expect(closes).toBe(1);
  });

  it('a part closed early by its owner is not closed again', async () => {
    const lifetime = new Lifetime();
    let closes = 0;
    const closeApp = lifetime.onClose(() => void (closes += 1));
    await closeApp();
    await closeApp();
    await lifetime.close();
    expect(closes).toBe(1);
  });

  it('a failing closer does not keep the others from closing, and close() rejects with its error', async () => {
    const lifetime = new Lifetime();
    const closed: string[] = [];
    const failure = new Error('metrics listener would not close');
    lifetime.onClose(() => void closed.push('first'));
    lifetime.onClose(() => {
      throw failure;
    });
    lifetime.onClose(() => void closed.push('last'));
    await expect(lifetime.close()).rejects.toBe(failure);
    expect(closed).toEqual(['last', 'first']);
  });

  it('several failures reject together, each one kept', async () => {
    const lifetime = new Lifetime();
    const a = new Error('a');
    const b = new Error('b');
    lifetime.onClose(() => Promise.reject(a));
    lifetime.onClose(() => Promise.reject(b));
    const error: unknown = await lifetime.close().catch((rejection: unknown) => rejection);
    expect(error).toBeInstanceOf(AggregateError);
    expect((error as AggregateError).errors).toEqual([b, a]);
  });

  it('refuses a closer registered after close(): nothing would close it', async () => {
    const lifetime = new Lifetime();
    await lifetime.close();
    expect(() => lifetime.onClose(() => undefined)).toThrow(/after close/);
  });
});
