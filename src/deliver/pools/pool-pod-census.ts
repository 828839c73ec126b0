/**
 * The state of every unclaimed Sandbox's pod (pool-pods.ts), kept up to date one Sandbox at a time: each change
 * of a Sandbox or of its pods judges that Sandbox again, so a watch event costs one judgement, never a pass over
 * all pods. Only a change of the injection config, which every judgement reads, judges them all again.
 *
 * It keeps, per Sandbox key, the judged pod, and from those the count of pods in each state (the gauge) and of
 * judged pods in each pool (the base of a per-pool share). Every replica keeps it, leading or not: the state
 * is a fact about the cluster, read from the caches every replica has. Whoever listens is told of each change
 * with the entry before and after, in the order they happen: the Events of the leader, and the replacement.
 */
import type { SandboxCache } from '../controller/controller.js';
import {
  judgePoolPod,
  POOL_POD_STATES,
  type ConfigInForce,
  type PoolPodJudgement,
  type PoolPodState,
} from './pool-pods.js';
import type { IdentitySettings } from '../../sandbox/pod-identity.js';

/** A judged pod, by the key of its Sandbox. */
export type PoolPodEntry = Extract<PoolPodJudgement, { kind: 'judged' }> & { key: string };

/** A Sandbox's entry changed: appeared (before undefined), left (after undefined), or was judged anew. */
export type CensusListener = (key: string, before: PoolPodEntry | undefined, after: PoolPodEntry | undefined) => void;

export interface PoolPodCensusDeps {
  cache: SandboxCache;
  /** The injection config as last read; undefined before its first listing. */
  config: () => ConfigInForce;
  settings: IdentitySettings;
}

export class PoolPodCensus {
  private readonly entries = new Map<string, PoolPodEntry>();
  private readonly counts = new Map<PoolPodState, number>(POOL_POD_STATES.map((state) => [state, 0]));
  private readonly poolSizes = new Map<string, number>();
  private readonly listeners: CensusListener[] = [];

  constructor(private readonly deps: PoolPodCensusDeps) {}

  listen(listener: CensusListener): void {
    this.listeners.push(listener);
  }

  /** Something about the Sandbox `key` or its pods changed: judge it again. */
  changed(key: string): void {
    const sandbox = this.deps.cache.get(key);
    const judgement =
      sandbox === undefined
        ? undefined
        : judgePoolPod(sandbox, this.deps.cache.podsOf(sandbox), this.deps.config(), this.deps.settings);
    const before = this.entries.get(key);
    const after = judgement?.kind === 'judged' ? { ...judgement, key } : undefined;
    if (after === undefined && before === undefined) return;
    if (after !== undefined && before !== undefined && sameEntry(before, after)) return;
    this.forget(before);
    if (after === undefined) this.entries.delete(key);
    else {
      this.entries.set(key, after);
      this.count(after, 1);
    }
    for (const listener of this.listeners) listener(key, before, after);
  }

  /** The config changed: every Sandbox is judged again. */
  judgeAll(): void {
    for (const key of [...new Set([...this.entries.keys(), ...this.deps.cache.keys()])]) this.changed(key);
  }

  entry(key: string): PoolPodEntry | undefined {
    return this.entries.get(key);
  }

  /** Every entry now, for a new term's look at all of them. */
  all(): IterableIterator<PoolPodEntry> {
    return this.entries.values();
  }

  /** Judged pods in each state. */
  figures(): Record<PoolPodState, number> {
    return {
      fine: this.counts.get('fine') ?? 0,
      missing: this.counts.get('missing') ?? 0,
      stale: this.counts.get('stale') ?? 0,
    };
  }

  /** Judged pods of the pool `poolKey` (its unclaimed Sandboxes' own pods). */
  poolSize(poolKey: string): number {
    return this.poolSizes.get(poolKey) ?? 0;
  }

  private forget(entry: PoolPodEntry | undefined): void {
    if (entry !== undefined) this.count(entry, -1);
  }

  private count(entry: PoolPodEntry, by: 1 | -1): void {
    this.counts.set(entry.state, (this.counts.get(entry.state) ?? 0) + by);
    const pool = entry.pool?.key;
    if (pool === undefined) return;
    const size = (this.poolSizes.get(pool) ?? 0) + by;
    if (size === 0) this.poolSizes.delete(pool);
    else this.poolSizes.set(pool, size);
  }
}

/** Everything a listener reads is the same: no need to tell anyone. */
function sameEntry(a: PoolPodEntry, b: PoolPodEntry): boolean {
  return (
    a.state === b.state &&
    a.podUid === b.podUid &&
    a.sandboxUid === b.sandboxUid &&
    a.podName === b.podName &&
    a.podVersion === b.podVersion &&
    a.ready === b.ready &&
    a.reason === b.reason &&
    a.pool?.key === b.pool?.key &&
    a.pool?.uid === b.pool?.uid &&
    a.expected === b.expected
  );
}
