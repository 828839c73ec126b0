/**
 * The one clock abstraction: wall time for what is written or compared with other machines' stamps, monotonic
 * time for every "how long since" this process judges itself (a frozen or stepped wall clock must not make a
 * stale lease look fresh), and timers that do not keep the process alive. Every part that reads the time or
 * waits is given a Clock; systemClock is the only place the process's own clocks and timers are read, and
 * tests pass one they move by hand (test/support/manual-clock.ts).
 */
import { performance } from 'node:perf_hooks';

export interface Clock {
  /** Wall time, ms since the epoch. */
  now(): number;
  /** Monotonic ms, from an arbitrary origin: only differences mean anything. */
  monotonic(): number;
  /**
   * Runs `run` after `ms`; the returned function cancels it. The timer does not keep the process alive, unless
   * `keepAlive` says it is the last work the process waits for before it exits.
   */
  setTimer(run: () => void, ms: number, options?: { keepAlive?: boolean }): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimer(run, ms, options) {
    const timer = setTimeout(run, ms);
    if (options?.keepAlive !== true) timer.unref();
    return () => clearTimeout(timer);
  },
};

/**
 * Waits `ms` on `clock`; an abort ends the wait early (resolving, not rejecting: the caller looks at the signal).
 * `keepAlive` as for `setTimer`.
 */
export function sleepOn(
  clock: Clock,
  ms: number,
  signal?: AbortSignal,
  options?: { keepAlive?: boolean },
): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const onAbort = (): void => {
      cancel();
      resolve();
    };
    const cancel = clock.setTimer(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      ms,
      options,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Runs `run` every `ms` on `clock` until the returned function is called. */
export function repeatOn(clock: Clock, ms: number, run: () => void): () => void {
  let stopped = false;
  let cancel: () => void = () => undefined;
  const arm = (): void => {
    cancel = clock.setTimer(() => {
      if (stopped) return;
      // Armed before `run`, so a run that throws does not end the repetition.
      arm();
      run();
    }, ms);
  };
  arm();
  return () => {
    stopped = true;
    cancel();
  };
}
