/**
 * A controller's work queue, as controller-runtime's: keys, not events, so a burst of changes to one Sandbox is
 * one reconcile; never the same key twice at once (a change during a run runs it again after); at most
 * `concurrency` keys at once. It holds only queue state: the keys queued, those running, those that changed
 * while running (dirty), and those given a wait (delayed). How long a failing key waits is the rate limiter's
 * (rate-limiter.ts), which the queue is given.
 *
 * A wait, a failure's backoff or a reconcile's requeue-after, runs the key when it ends. A change of the key
 * before then runs it at once, told that it is early: whether the change matters is the reconcile's to decide,
 * as every decision is; when it does not, the reconcile answers `keep-waiting` and the wait goes on as it was.
 *
 * Two lanes: the front one for keys a tenant waits on (claims), and the background one for retries and for
 * keys nobody waits on (a pool's unclaimed pods, which a new term sweeps all at once). Background keys hold at
 * most `backgroundSlots` of the slots, so a claim is never queued behind a crowd of pool pods being swept or of
 * unreachable pods timing out.
 */
import type { Clock } from '../../time/clock.js';
import type { RateLimiter } from './rate-limiter.js';

/** What a reconcile says happens next. */
export type ReconcileResult =
  /** Nothing more until the key changes: done, refused, or nothing to do until then. Its failures are forgotten. */
  | { kind: 'done' }
  /** Not a failure: look again after `ms` (a grace given to a pod). Its failures are forgotten. */
  | { kind: 'requeue-after'; ms: number }
  /** A failure worth retrying: after the rate limiter's wait, which grows with each failure in a row. */
  | { kind: 'retry' }
  /** An early run (see Run) found that the change does not matter: the wait goes on, and the failures stand. */
  | { kind: 'keep-waiting' };

/** What the queue tells a reconcile of its run. */
export interface Run {
  /** When the key was queued for this run (monotonic): the first change of it since its last run began. */
  since: number;
  /** The key was given a wait that has not ended: a change of it runs it before. */
  early: boolean;
}

export interface WorkQueueOptions {
  concurrency: number;
  backgroundSlots: number;
  /** How long a failing key waits before it runs again. */
  limiter: RateLimiter;
  clock: Clock;
  work: (key: string, run: Run) => Promise<ReconcileResult>;
  /** A reconcile that threw: a bug. The key is retried like a failure. */
  onBug: (key: string, error: unknown) => void;
  /** Each retry scheduled, with its wait. */
  onRetry?: (key: string, waitMs: number) => void;
}

export interface QueueFigures {
  depth: number;
  /** Seconds the oldest queued key has waited, 0 when none waits. */
  oldestQueuedSeconds: number;
  /** Seconds the longest-running reconcile has run, 0 when none runs. */
  longestRunningSeconds: number;
}

/** Where a change is queued: `front` for what a tenant waits on, `background` for the rest. */
export type Lane = 'front' | 'background';

export class WorkQueue {
  /** Queued keys, by lane, with when each was queued. */
  private readonly lanes: Record<Lane, Map<string, number>> = { front: new Map(), background: new Map() };
  private readonly running = new Map<string, { since: number; lane: Lane }>();
  /** Keys that changed while running: when first, and in which lane they run again. */
  private readonly dirty = new Map<string, { since: number; lane: Lane }>();
  /** Keys given a wait, with how to cancel it. */
  private readonly delayed = new Map<string, () => void>();
  private readonly idleWaiters: (() => void)[] = [];
  private accepting = true;

  constructor(private readonly options: WorkQueueOptions) {}

  /**
   * A change of `key`: queued in `lane`, or, while it runs, run again after. A key queued in the background
   * moves to the front when a change of it is for the front.
   */
  add(key: string, lane: Lane = 'front'): void {
    if (!this.accepting) return;
    const now = this.options.clock.monotonic();
    if (this.running.has(key)) {
      const dirty = this.dirty.get(key);
      this.dirty.set(key, { since: dirty?.since ?? now, lane: dirty?.lane === 'front' ? 'front' : lane });
      return;
    }
    this.queue(key, lane, now);
    this.pump();
  }

  /** Drops every queued key, wait and failure count; what runs finishes (its caller aborts it if need be). */
  clear(): void {
    this.lanes.front.clear();
    this.lanes.background.clear();
    for (const cancel of this.delayed.values()) cancel();
    this.delayed.clear();
    this.options.limiter.clear();
    this.dirty.clear();
    this.settleIdle();
  }

  /** From now on nothing new starts; resolves once nothing runs. */
  stop(): Promise<void> {
    this.accepting = false;
    this.clear();
    if (!this.busy()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  busy(): boolean {
    return this.running.size > 0 || this.lanes.front.size > 0 || this.lanes.background.size > 0;
  }

  figures(): QueueFigures {
    const now = this.options.clock.monotonic();
    let oldest = now;
    for (const lane of Object.values(this.lanes)) for (const since of lane.values()) oldest = Math.min(oldest, since);
    let longest = now;
    for (const { since } of this.running.values()) longest = Math.min(longest, since);
    return {
      depth: this.lanes.front.size + this.lanes.background.size,
      oldestQueuedSeconds: (now - oldest) / 1000,
      longestRunningSeconds: (now - longest) / 1000,
    };
  }

  private queue(key: string, lane: Lane, since: number): void {
    if (this.lanes.front.has(key)) return;
    const queued = this.lanes.background.get(key);
    if (queued !== undefined && lane === 'background') return;
    this.lanes.background.delete(key);
    this.lanes[lane].set(key, queued ?? since);
  }

  private backgroundSlotsUsed(): number {
    let used = 0;
    for (const { lane } of this.running.values()) if (lane === 'background') used += 1;
    return used;
  }

  /** The next key to run: the front first; the background only while it holds fewer than its slots. */
  private next(): { key: string; lane: Lane; since: number } | undefined {
    for (const [key, since] of this.lanes.front) {
      this.lanes.front.delete(key);
      return { key, lane: 'front', since };
    }
    if (this.backgroundSlotsUsed() >= this.options.backgroundSlots) return undefined;
    for (const [key, since] of this.lanes.background) {
      this.lanes.background.delete(key);
      return { key, lane: 'background', since };
    }
    return undefined;
  }

  private pump(): void {
    while (this.accepting && this.running.size < this.options.concurrency) {
      const picked = this.next();
      if (picked === undefined) break;
      this.start(picked.key, picked.lane, picked.since);
    }
    this.settleIdle();
  }

  private start(key: string, lane: Lane, since: number): void {
    this.running.set(key, { since: this.options.clock.monotonic(), lane });
    void this.options
      .work(key, { since, early: this.delayed.has(key) })
      .catch((error: unknown): ReconcileResult => {
        this.options.onBug(key, error);
        return { kind: 'retry' };
      })
      .then((result) => {
        this.running.delete(key);
        if (this.accepting) this.settle(key, result);
        this.pump();
      });
  }

  private settle(key: string, result: ReconcileResult): void {
    const { limiter } = this.options;
    switch (result.kind) {
      case 'keep-waiting':
        break;
      case 'retry': {
        const wait = limiter.when(key);
        this.options.onRetry?.(key, wait);
        this.delay(key, wait);
        break;
      }
      case 'requeue-after':
        limiter.forget(key);
        this.delay(key, result.ms);
        break;
      case 'done':
        limiter.forget(key);
        this.delayed.get(key)?.();
        this.delayed.delete(key);
        break;
    }
    // A change during the run runs it again; if the key now waits, that run is early, and the reconcile decides.
    const dirty = this.dirty.get(key);
    this.dirty.delete(key);
    if (dirty !== undefined) this.queue(key, dirty.lane, dirty.since);
  }

  /** Runs `key` after `ms` (in the background: nobody waits on a retry), in place of any wait it had. */
  private delay(key: string, ms: number): void {
    this.delayed.get(key)?.();
    this.delayed.set(
      key,
      this.options.clock.setTimer(() => {
        this.delayed.delete(key);
        this.add(key, 'background');
      }, ms),
    );
  }

  private settleIdle(): void {
    if (!this.busy()) for (const done of this.idleWaiters.splice(0)) done();
  }
}
