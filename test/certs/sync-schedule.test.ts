/**
 * When passes run (src/certs/sync-schedule.ts), with a scripted pass and a clock the test moves by hand: the
 * order of passes and the waits the schedule asks for.
 */
import { describe, expect, it } from 'vitest';
import { startSyncSchedule, type PassOutcome, type SyncPasses } from '../../src/certs/sync-schedule.js';
import type { RenewalRequest } from '../../src/certs/plan.js';
import { recordingLogger } from '../server/support/server.js';
import { ManualClock } from '../support/manual-clock.js';
import type { Clock } from '../../src/time/clock.js';

const POLL_MS = 60_000;
const RETRY_MIN_MS = 1_000;

/** The schedule's timing on a fresh clock; `random` 1 makes each backoff wait its ceiling. */
function timing(pollIntervalMs = POLL_MS, random = () => 1) {
  const clock = new ManualClock();
  return { clock, timing: { pollIntervalMs, retry: { minMs: RETRY_MIN_MS, maxMs: pollIntervalMs }, random, clock } };
}

/** The wait the schedule asks for next (or already waits out), in ms. */
async function nextWait(clock: ManualClock): Promise<number> {
  if (clock.pending().length === 0) await clock.nextTimer();
  const [wait] = clock.pending();
  if (wait === undefined) throw new Error('no wait pending');
  return wait;
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
    const { clock, timing: t } = timing();
    const passes = scriptedPasses([{ retrySoon: false }]);
    const schedule = startSyncSchedule(passes, t, recordingLogger());
    await schedule.ready;
    expect(await nextWait(clock)).toBe(POLL_MS);
    clock.advance(POLL_MS);
    expect(await nextWait(clock)).toBe(POLL_MS);
    expect(passes.requests).toEqual([{}, {}]);
    await schedule.stop();
  });

  it('backs off after failures, doubling up to the poll interval, and logs each', async () => {
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
    const { clock, timing: t } = timing(20_000);
    const schedule = startSyncSchedule(passes, t, logger);
    const waits: number[] = [];
    for (let i = 0; i < 8; i += 1) {
      const wait = await nextWait(clock);
      waits.push(wait);
      clock.advance(wait);
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 20_000, 20_000, 20_000]);
    expect(logger.lines.filter((line) => line.message === 'self-managed certificates: pass failed')).toHaveLength(7);
    await schedule.stop();
  });

  it('spreads the retries of replicas that failed together: each wait is jittered within its upper half', async () => {
    const { clock, timing: t } = timing(POLL_MS, () => 0);
    const schedule = startSyncSchedule(scriptedPasses([new Error('API unreachable')]), t, recordingLogger());
    const waits: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const wait = await nextWait(clock);
      waits.push(wait);
      clock.advance(wait);
    }
    expect(waits).toEqual([RETRY_MIN_MS / 2, RETRY_MIN_MS, RETRY_MIN_MS * 2]);
    await schedule.stop();
  });

  it('looks again soon while a pass says something is not settled', async () => {
    const { clock, timing: t } = timing();
    const schedule = startSyncSchedule(scriptedPasses([{ retrySoon: true }]), t, recordingLogger());
    expect(await nextWait(clock)).toBe(RETRY_MIN_MS * 5);
    await schedule.stop();
  });

  it('runs renewNow() after the pass in progress, with the renewal asked for', async () => {
    const { timing: t } = timing();
    const passes = scriptedPasses([{ retrySoon: false }]);
    const schedule = startSyncSchedule(passes, t, recordingLogger());
    await schedule.renewNow({ renewServing: true, rotateCa: true });
    expect(passes.requests).toEqual([{}, { renewServing: true, rotateCa: true }]);
    await schedule.stop();
    await expect(schedule.renewNow({ renewServing: true })).rejects.toThrow(/stopped/);
  });

  it('keeps the process alive while it retries before the first files, and not once they are written', async () => {
    const { clock, timing: t } = timing();
    const keepAlive: boolean[] = [];
    const recording: Clock = {
      now: clock.now,
      monotonic: clock.monotonic,
      setTimer: (run, ms, options) => {
        keepAlive.push(options?.keepAlive === true);
        return clock.setTimer(run, ms);
      },
    };
    const schedule = startSyncSchedule(
      scriptedPasses([new Error('Secret missing'), { retrySoon: false }]),
      { ...t, clock: recording },
      recordingLogger(),
    );
    clock.advance(await nextWait(clock));
    await schedule.ready;
    await nextWait(clock);
    expect(keepAlive).toEqual([true, false]);
    await schedule.stop();
  });

  it('stop() before any usable files rejects ready', async () => {
    const { clock, timing: t } = timing();
    const schedule = startSyncSchedule(scriptedPasses([new Error('forbidden')]), t, recordingLogger());
    await nextWait(clock);
    await schedule.stop();
    await expect(schedule.ready).rejects.toThrow(/stopped before they were ready/);
    expect(clock.pending()).toEqual([]);
  });
});
