/**
 * When passes run (src/certs/sync-schedule.ts), with a scripted pass and a delay the test ends by hand:
 * no clock is involved, only the order of passes and the waits the schedule asks for.
 */
import { describe, expect, it } from 'vitest';
import { startSyncSchedule, type PassOutcome, type SyncPasses } from '../../src/certs/sync-schedule.js';
import type { RenewalRequest } from '../../src/certs/plan.js';
import { recordingLogger } from '../server/support/server.js';

const POLL_MS = 60_000;
const RETRY_MIN_MS = 1_000;

/** Waits the schedule asked for, each ended by the test; `next()` resolves with the next one asked for. */
function handDelays(): { delay: (ms: number) => Promise<void>; next: () => Promise<{ ms: number; end: () => void }> } {
  const asked: { ms: number; end: () => void }[] = [];
  const waiting: ((wait: { ms: number; end: () => void }) => void)[] = [];
  return {
    delay: (ms) =>
      new Promise<void>((resolve) => {
        const wait = { ms, end: resolve };
        const waiter = waiting.shift();
        if (waiter === undefined) asked.push(wait);
        else waiter(wait);
      }),
    next: () => {
      const wait = asked.shift();
      return wait === undefined ? new Promise((resolve) => waiting.push(resolve)) : Promise.resolve(wait);
    },
  };
}

/** Passes that follow `script` in turn (an Error fails that pass), then repeat its last step. */
function scriptedPasses(script: (PassOutcome | Error)[]): SyncPasses & { requests: RenewalRequest[]; files: boolean } {
  const passes = {
    requests: [] as RenewalRequest[],
    files: false,
    pass: (request: RenewalRequest) => {
      passes.requests.push(request);
      const step = script.length > 1 ? script.shift() : script[0];
      if (step === undefined || step instanceof Error) return Promise.reject(step ?? new Error('no script'));
      passes.files = true;
      return Promise.resolve(step);
    },
    filesPresent: () => Promise.resolve(passes.files),
  };
  return passes;
}

describe('startSyncSchedule', () => {
  it('passes at once, then once per poll interval; ready once files are in place', async () => {
    const delays = handDelays();
    const passes = scriptedPasses([{ retrySoon: false }]);
    const schedule = startSyncSchedule(
      passes,
      { pollIntervalMs: POLL_MS, retryMinMs: RETRY_MIN_MS, delay: delays.delay },
      recordingLogger(),
    );
    await schedule.ready;
    const first = await delays.next();
    expect(first.ms).toBe(POLL_MS);
    first.end();
    expect((await delays.next()).ms).toBe(POLL_MS);
    expect(passes.requests).toEqual([{}, {}]);
    await schedule.stop();
  });

  it('backs off after failures, doubling up to the poll interval, and logs each', async () => {
    const delays = handDelays();
    const failure = new Error('API unreachable');
    const passes = scriptedPasses([
      failure,
      failure,
      failure,
      failure,
      failure,
      failure,
      failure,
      { retrySoon: false },
    ]);
    const logger = recordingLogger();
    const schedule = startSyncSchedule(
      passes,
      { pollIntervalMs: 20_000, retryMinMs: RETRY_MIN_MS, delay: delays.delay },
      logger,
    );
    const waits: number[] = [];
    for (let i = 0; i < 8; i += 1) {
      const wait = await delays.next();
      waits.push(wait.ms);
      wait.end();
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 20_000, 20_000, 20_000]);
    expect(logger.lines.filter((line) => line.message === 'self-managed certificates: pass failed')).toHaveLength(7);
    await schedule.stop();
  });

  it('looks again soon while a pass says something is not settled', async () => {
    const delays = handDelays();
    const schedule = startSyncSchedule(
      scriptedPasses([{ retrySoon: true }]),
      { pollIntervalMs: POLL_MS, retryMinMs: RETRY_MIN_MS, delay: delays.delay },
      recordingLogger(),
    );
    expect((await delays.next()).ms).toBe(RETRY_MIN_MS * 5);
    await schedule.stop();
  });

  it('runs renewNow() after the pass in progress, with the renewal asked for', async () => {
    const delays = handDelays();
    const passes = scriptedPasses([{ retrySoon: false }]);
    const schedule = startSyncSchedule(
      passes,
      { pollIntervalMs: POLL_MS, retryMinMs: RETRY_MIN_MS, delay: delays.delay },
      recordingLogger(),
    );
    await schedule.renewNow({ renewServing: true, rotateCa: true });
    expect(passes.requests).toEqual([{}, { renewServing: true, rotateCa: true }]);
    await schedule.stop();
    await expect(schedule.renewNow({ renewServing: true })).rejects.toThrow(/stopped/);
  });

  it('stop() before any usable files rejects ready', async () => {
    const delays = handDelays();
    const schedule = startSyncSchedule(
      scriptedPasses([new Error('forbidden')]),
      { pollIntervalMs: POLL_MS, retryMinMs: RETRY_MIN_MS, delay: delays.delay },
      recordingLogger(),
    );
    await delays.next();
    await schedule.stop();
    await expect(schedule.ready).rejects.toThrow(/stopped before they were ready/);
  });
});
