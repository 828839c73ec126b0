/**
 * The tests' one bounded wait (test/support/wait-until.ts): it asks until the probe gives what is waited for,
 * and fails at its deadline naming what it waited for and the last value it saw.
 */
import { describe, expect, it } from 'vitest';
import { waitUntil } from './support/wait-until.js';

describe('waitUntil', () => {
  it('asks until the probe gives a value, and resolves with it', async () => {
    let asks = 0;
    const found = await waitUntil(() => (++asks < 3 ? undefined : { asks }), { what: 'three asks', timeoutMs: 5000 });
    expect(found).toEqual({ asks: 3 });
  });

  it('by default waits past what is not truthy: undefined, null, false, 0 and the empty string', async () => {
    const values: unknown[] = [undefined, null, false, 0, '', Number.NaN, 'here'];
    expect(await waitUntil(() => values.shift(), { what: 'a value', timeoutMs: 5000, intervalMs: 1 })).toBe('here');
    expect(values).toEqual([]);
  });

  it('takes the value `until` accepts', async () => {
    let n = 0;
    expect(
      await waitUntil(() => (n += 1), { what: 'n at 4', timeoutMs: 5000, intervalMs: 1, until: (v) => v >= 4 }),
    ).toBe(4);
  });

  it('asks once even with no time to wait', async () => {
    expect(await waitUntil(() => 'here', { what: 'at once', timeoutMs: 0 })).toBe('here');
  });

  it('fails at its deadline naming what it waited for, the last value seen and the detail', async () => {
    let n = 0;
    const started = performance.now();
    const wait = waitUntil(() => ({ count: (n += 1) }), {
      what: 'a count of a million',
      timeoutMs: 60,
      intervalMs: 5,
      until: (v) => v.count >= 1_000_000,
      detail: () => 'the log says nothing',
    });
    const error = await wait.then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(59);
    expect(error?.message).toMatch(/^timed out after 60 ms waiting for a count of a million \(asked \d+ times\)/);
    expect(error?.message).toContain(`last seen: { count: ${n} }`);
    expect(error?.message).toMatch(/\nthe log says nothing$/);
  });

  it('ends at once with the error giveUp gives, and with the error the probe throws', async () => {
    const gone = new Error('the process exited');
    await expect(waitUntil(() => false, { what: 'a process', timeoutMs: 60_000, giveUp: () => gone })).rejects.toBe(
      gone,
    );
    const broken = new Error('the probe broke');
    await expect(
      waitUntil(
        () => {
          throw broken;
        },
        { what: 'a broken probe', timeoutMs: 60_000 },
      ),
    ).rejects.toBe(broken);
  });
});
