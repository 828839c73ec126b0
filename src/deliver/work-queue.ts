/**
 * A controller's work queue, as controller-runtime's: keys, not events, so a burst of changes to one Sandbox is
 * one reconcile; never the same key twice at once (a change during a run runs it again after); at most
 * `concurrency` keys at once. A failing key waits as long as the rate limiter it is given says
 * (rate-limiter.ts), and a change of the key does not skip that wait (the failing attempt waits its turn; a
 * caller that knows the inputs changed says so with `addNow`).
 *
 * Two lanes: the front one for keys a tenant waits on (claims), and the background one for retries and for
 * keys nobody waits on (a pool's unclaimed pods, which a new term sweeps all at once). Background keys hold at
 * most `backgroundSlots` of the slots, so a claim is never queued behind a crowd of pool pods being swept or of
 * unreachable pods timing out.
 */
import type { Clock } from '../util/clock.js';
import type { RateLimiter } from './rate-limiter.js';

/** What a reconcile says happens next. */
export type ReconcileResult =
  | { kind: 'done' }
  /** Not a failure: look again after `ms` (for instance, an Event held back). */
  | { kind: 'requeue-after'; ms: number }
  /** Nothing to do until the key changes (a refusal, a pod without an address). */
  | { kind: 'wait-for-change' }
  /** A failure worth retrying: after the key's backoff, which grows with each failure in a row. */
  | { kind: 'retry' };

export interface WorkQueueOptions {
  concurrency: number;
  backgroundSlots: number;
  /** How long a failing key waits before it runs again. */
  limiter: RateLimiter;
  clock: Clock;
  work: (key: string) => Promise<ReconcileResult>;
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
  private readonly lanes: Record<Lane, Map<string, number>> = { front: new Map(), background: new Map() };
  private readonly running = new Map<string, { since: number; lane: Lane }>();
  private readonly dirty = new Set<string>();
  /** The dirty keys of which a change was for the front. */
  private readonly dirtyFront = new Set<string>();
  /** Keys whose inputs changed during a run: whatever the run came to, they run again at once. */
  private readonly urgent = new Set<string>();
  private readonly waiting = new Map<string, () => void>();
  private readonly idleWaiters: (() => void)[] = [];
  private accepting = true;

  constructor(private readonly options: WorkQueueOptions) {}

  /**
   * A change of `key`: queued in `lane`, unless it waits out a backoff (then it runs when that ends). A key
   * queued in the background moves to the front when a change of it is for the front.
   */
  add(key: string, lane: Lane = 'front'): void {
    if (!this.accepting) return;
    if (this.running.has(key)) {
      this.dirty.add(key);
      if (lane === 'front') this.dirtyFront.add(key);
      return;
    }
    if (this.waiting.has(key) || this.lanes.front.has(key)) return;
    const queued = this.lanes.background.get(key);
    if (queued !== undefined && lane === 'background') return;
    this.lanes.background.delete(key);
    this.lanes[lane].set(key, queued ?? this.options.clock.monotonic());
    this.pump();
  }

  /** A change that makes the failing attempt moot (new inputs): its backoff is dropped and it runs now. */
  addNow(key: string, lane: Lane = 'front'): void {
    this.forget(key);
    if (this.running.has(key)) this.urgent.add(key);
    this.add(key, lane);
  }

  /** True while `key` waits for a retry. */
  backingOff(key: string): boolean {
    return this.waiting.has(key);
  }

  /** Drops every queued key, wait and failure count; what runs finishes (its caller aborts it if need be). */
  clear(): void {
    this.lanes.front.clear();
    this.lanes.background.clear();
    for (const cancel of this.waiting.values()) cancel();
    this.waiting.clear();
    this.options.limiter.clear();
    this.dirty.clear();
    this.dirtyFront.clear();
    this.urgent.clear();
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

  private forget(key: string): void {
    this.waiting.get(key)?.();
    this.waiting.delete(key);
    this.options.limiter.forget(key);
    this.lanes.background.delete(key);
  }

  private backgroundSlotsUsed(): number {
    let used = 0;
    for (const { lane } of this.running.values()) if (lane === 'background') used += 1;
    return used;
  }

  /** The next key to run: the front first; the background only while it holds fewer than its slots. */
  private next(): { key: string; lane: Lane } | undefined {
    for (const key of this.lanes.front.keys()) {
      this.lanes.front.delete(key);
      return { key, lane: 'front' };
    }
    if (this.backgroundSlotsUsed() >= this.options.backgroundSlots) return undefined;
    for (const key of this.lanes.background.keys()) {
      this.lanes.background.delete(key);
      return { key, lane: 'background' };
    }
    return undefined;
  }

  private pump(): void {
    while (this.accepting && this.running.size < this.options.concurrency) {
      const picked = this.next();
      if (picked === undefined) break;
      this.start(picked.key, picked.lane);
    }
    this.settleIdle();
  }

  private start(key: string, lane: Lane): void {
    this.running.set(key, { since: this.options.clock.monotonic(), lane });
    void this.options
      .work(key)
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
    const again: Lane = this.dirtyFront.delete(key) ? 'front' : 'background';
    if (this.urgent.delete(key)) {
      this.options.limiter.forget(key);
      this.dirty.delete(key);
      this.add(key, again);
      return;
    }
    if (result.kind === 'retry') {
      const wait = this.options.limiter.when(key);
      this.options.onRetry?.(key, wait);
      this.dirty.delete(key);
      this.waitThenRetry(key, wait);
      return;
    }
    this.options.limiter.forget(key);
    if (result.kind === 'requeue-after') {
      this.dirty.delete(key);
      this.waitThenRetry(key, result.ms);
      return;
    }
    if (this.dirty.delete(key)) this.add(key, again);
  }

  private waitThenRetry(key: string, ms: number): void {
    this.waiting.get(key)?.();
    this.waiting.set(
      key,
      this.options.clock.setTimer(() => {
        this.waiting.delete(key);
        if (!this.accepting) return;
        this.lanes.background.set(key, this.options.clock.monotonic());
        this.pump();
      }, ms),
    );
  }

  private settleIdle(): void {
    if (!this.busy()) for (const done of this.idleWaiters.splice(0)) done();
  }
}
