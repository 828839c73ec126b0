/**
 * Events go out behind the deliveries. Each is an API call that costs this process and kube-apiserver CPU, and
 * in a burst of claims that CPU is what the deliveries still waiting need, so while `busy()` says deliveries
 * are queued or running, Events wait, each for at most `maxHoldMs` (under a constant stream of claims they
 * still go out, late). They then go out a few at a time. The queue is bounded: past `limit` waiting, the
 * oldest is dropped and counted.
 */
import type { Clock } from '../../time/clock.js';

export interface EventQueue {
  push(send: () => Promise<void>): void;
  /** At shutdown: from now on nothing is held; resolves once nothing waits or is in flight. */
  drained(): Promise<void>;
}

export interface EventQueueOptions {
  concurrency: number;
  limit: number;
  /** True while deliveries are queued or running: Events wait then. */
  busy: () => boolean;
  maxHoldMs: number;
  clock: Clock;
  onDropped: () => void;
  onError: (error: unknown) => void;
}

/** How often a held queue looks again whether the deliveries are done. */
const RECHECK_MS = 50;

export function eventQueue(options: EventQueueOptions): EventQueue {
  const waiting: { send: () => Promise<void>; at: number }[] = [];
  let active = 0;
  let draining = false;
  let recheck: (() => void) | undefined;
  let drainWaiters: (() => void)[] = [];
  const empty = (): boolean => active === 0 && waiting.length === 0;

  const held = (): boolean => {
    const oldest = waiting[0];
    if (draining || oldest === undefined || !options.busy()) return false;
    const left = oldest.at + options.maxHoldMs - options.clock.monotonic();
    if (left <= 0) return false;
    recheck ??= options.clock.setTimer(
      () => {
        recheck = undefined;
        next();
      },
      Math.min(RECHECK_MS, left),
    );
    return true;
  };
  const next = (): void => {
    while (active < options.concurrency && waiting.length > 0 && !held()) {
      const { send } = waiting.shift() as { send: () => Promise<void> };
      active += 1;
      send()
        .catch(options.onError)
        .finally(() => {
          active -= 1;
          next();
        });
    }
    if (empty()) {
      for (const done of drainWaiters) done();
      drainWaiters = [];
    }
  };
  return {
    push(send) {
      waiting.push({ send, at: options.clock.monotonic() });
      if (waiting.length > options.limit) {
        waiting.shift();
        options.onDropped();
      }
      next();
    },
    drained() {
      draining = true;
      recheck?.();
      recheck = undefined;
      if (empty()) return Promise.resolve();
      const done = new Promise<void>((resolve) => drainWaiters.push(resolve));
      next();
      return done;
    },
  };
}
