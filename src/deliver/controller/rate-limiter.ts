/**
 * The work queue's rate limiter (work-queue.ts takes one), per key, as client-go's per-item exponential
 * limiter: each failure of a key in a row makes it wait longer before it may run again, capped and jittered
 * (time/backoff.ts), until the key is forgotten: it succeeded, what it was tried on changed, or it is gone. It
 * only counts and says how long; the queue holds the waits.
 */
import { backoffDelay, type BackoffSettings } from '../../time/backoff.js';

export interface RateLimiter {
  /** A failure of `key`: counted, and the answer is how long (ms) it waits before it may run again. */
  when(key: string): number;
  /** How many failures of `key` in a row were counted since it was last forgotten. */
  failures(key: string): number;
  /** `key` starts afresh: its next failure waits the least. */
  forget(key: string): void;
  /** Every key starts afresh. */
  clear(): void;
}

/** The per-key backoff of time/backoff.ts: the n-th failure in a row waits up to `minMs` * 2^(n-1), `maxMs` at most. */
export class BackoffRateLimiter implements RateLimiter {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly settings: BackoffSettings,
    private readonly random: () => number,
  ) {}

  when(key: string): number {
    const failures = this.failures(key) + 1;
    this.counts.set(key, failures);
    return backoffDelay(failures, this.settings, this.random);
  }

  failures(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  forget(key: string): void {
    this.counts.delete(key);
  }

  clear(): void {
    this.counts.clear();
  }
}
