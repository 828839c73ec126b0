/**
 * The one clock abstraction: wall time for what is written or compared with other machines' stamps, monotonic
 * time for every "how long since" this process judges itself (a frozen or stepped wall clock must not make a
 * stale lease look fresh), and timers that do not keep the process alive. Tests pass their own.
 */
import { performance } from 'node:perf_hooks';

export interface Clock {
  /** Wall time, ms since the epoch. */
  now(): number;
  /** Monotonic ms, from an arbitrary origin: only differences mean anything. */
  monotonic(): number;
  /** Runs `run` after `ms`; the returned function cancels it. */
  setTimer(run: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimer(run, ms) {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** Waits `ms` on `clock`; an abort ends the wait early (resolving, not rejecting: the caller looks at the signal). */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const onAbort = (): void => {
      cancel();
      resolve();
    };
    const cancel = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
