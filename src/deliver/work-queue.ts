/**
 * A controller's work queue, as controller-runtime's: keys, not events, so a burst of changes to one Sandbox is
 * one reconcile; never the same key twice at once (a change during a run runs it again after); at most
 * `concurrency` keys at once; and one rate limiter, a capped per-key backoff that a change of the key does not
 * skip (the failing attempt waits its turn; a caller that knows the inputs changed says so with `addNow`).
 *
 * Two lanes: keys that changed, and keys being retried. Retries hold at most `retrySlots` of the slots, so a
 * claim is never queued behind a crowd of unreachable pods timing out.
 */
import type { Clock } from '../util/clock.js';
import { backoffDelay, type BackoffSettings } from '../util/backoff.js';

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
  retrySlots: number;
  backoff: BackoffSettings;
  random: () => number;
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

type Lane = 'changed' | 'retry';

export class WorkQueue {
  private readonly lanes: Record<Lane, Map<string, number>> = { changed: new Map(), retry: new Map() };
  private readonly running = new Map<string, { since: number; lane: Lane }>();
  private readonly dirty = new Set<string>();
  /** Keys whose inputs changed during a run: whatever the run came to, they run again at once. */
  private readonly urgent = new Set<string>();
  private readonly waiting = new Map<string, () => void>();
  private readonly failures = new Map<string, number>();
  private readonly idleWaiters: (() => void)[] = [];
  private accepting = true;

  constructor(private readonly options: WorkQueueOptions) {}

  /** A change of `key`: queued at once, unless it waits out a backoff (then it runs when that ends). */
  add(key: string): void {
    if (!this.accepting) return;
    if (this.running.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.waiting.has(key) || this.lanes.changed.has(key) || this.lanes.retry.has(key)) return;
    this.lanes.changed.set(key, this.options.clock.monotonic());
    this.pump();
  }

  /** A change that makes the failing attempt moot (new inputs): its backoff is dropped and it runs now. */
  addNow(key: string): void {
    this.forget(key);
    if (this.running.has(key)) this.urgent.add(key);
    this.add(key);
  }

  /** True while `key` waits for a retry. */
  backingOff(key: string): boolean {
    return this.waiting.has(key);
  }

  /** Drops every queued key, wait and failure count; what runs finishes (its caller aborts it if need be). */
  clear(): void {
    this.lanes.changed.clear();
    this.lanes.retry.clear();
    for (const cancel of this.waiting.values()) cancel();
    this.waiting.clear();
    this.failures.clear();
    this.dirty.clear();
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
    return this.running.size > 0 || this.lanes.changed.size > 0 || this.lanes.retry.size > 0;
  }

  figures(): QueueFigures {
    const now = this.options.clock.monotonic();
    let oldest = now;
    for (const lane of Object.values(this.lanes)) for (const since of lane.values()) oldest = Math.min(oldest, since);
    let longest = now;
    for (const { since } of this.running.values()) longest = Math.min(longest, since);
    return {
      depth: this.lanes.changed.size + this.lanes.retry.size,
      oldestQueuedSeconds: (now - oldest) / 1000,
      longestRunningSeconds: (now - longest) / 1000,
    };
  }

  private forget(key: string): void {
    this.waiting.get(key)?.();
    this.waiting.delete(key);
    this.failures.delete(key);
    this.lanes.retry.delete(key);
  }

  private retrySlotsUsed(): number {
    let used = 0;
    for (const { lane } of this.running.values()) if (lane === 'retry') used += 1;
    return used;
  }

  /** The next key to run: changed keys first; retries only while they hold fewer than their slots. */
  private next(): { key: string; lane: Lane } | undefined {
    for (const key of this.lanes.changed.keys()) {
      this.lanes.changed.delete(key);
      return { key, lane: 'changed' };
    }
    if (this.retrySlotsUsed() >= this.options.retrySlots) return undefined;
    for (const key of this.lanes.retry.keys()) {
      this.lanes.retry.delete(key);
      return { key, lane: 'retry' };
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
    if (this.urgent.delete(key)) {
      this.failures.delete(key);
      this.dirty.delete(key);
      this.add(key);
      return;
    }
    if (result.kind === 'retry') {
      const failures = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, failures);
      const wait = backoffDelay(failures, this.options.backoff, this.options.random);
      this.options.onRetry?.(key, wait);
      this.dirty.delete(key);
      this.waitThenRetry(key, wait);
      return;
    }
    this.failures.delete(key);
    if (result.kind === 'requeue-after') {
      this.dirty.delete(key);
      this.waitThenRetry(key, result.ms);
      return;
    }
    if (this.dirty.delete(key)) this.add(key);
  }

  private waitThenRetry(key: string, ms: number): void {
    this.waiting.get(key)?.();
    this.waiting.set(
      key,
      this.options.clock.setTimer(() => {
        this.waiting.delete(key);
        if (!this.accepting) return;
        this.lanes.retry.set(key, this.options.clock.monotonic());
        this.pump();
      }, ms),
    );
  }

  private settleIdle(): void {
    if (!this.busy()) for (const done of this.idleWaiters.splice(0)) done();
  }
}
