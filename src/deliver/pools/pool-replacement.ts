/**
 * Opt-in replacement of unclaimed pool pods that are missing their runtimes or stale (pool-pods.ts): the pod is
 * deleted, and the pool's own controller makes a new one under today's config. It deletes, so it is bounded and
 * careful the way a Deployment's rollout is:
 *
 * - Only the states asked for (`--replace-pool-pods`), only pods of a pool (a Sandbox whose controller owner is a
 *   SandboxSet), only while this replica holds the Lease: every request is sent only while the term is fresh,
 *   checked right before it goes, and a new term starts with nothing in flight.
 * - Never a claimed Sandbox's pod, never one a claim may be landing on: right before the delete, the Sandbox is
 *   read from the API server (not the cache) and must still be unclaimed, in the same pool and name this pod;
 *   and the delete is conditioned on the pod's UID and resourceVersion, so a pod that changed since it was
 *   judged (a claim's labels reaching it, a restart) is not deleted. A claim written in the one round trip
 *   between that read and the delete cannot be seen; the Sandbox is read once more after the delete, and such
 *   a claim is reported.
 * - At most `maxAtOnce` replacements in flight across the cluster and `maxPerPool` in each pool (a count, or a
 *   share of the pool's judged pods, at least one). A replacement is in flight from its delete until the pod
 *   that came after it in the pool (the first new pod judged there) is Ready, or `readyTimeoutMs` has passed:
 *   with one per pool, a pod is replaced only once the replacement of the last one is Ready again.
 * - A loop stops: a pod that comes back in the state its predecessor was replaced for, twice in a row in a
 *   pool (or not at all within the timeout), stops that pool's replacement until the injection config changes
 *   or a new term begins. A config that cannot be injected must not make a delete loop.
 *
 * Each deletion, each stop, each skip is reported (an Event on the Sandbox and a counter for the first two).
 */
import type { Clock } from '../../time/clock.js';
import { errorLine } from '../../errors/error-message.js';
import { isClaimed } from '../controller/claim.js';
import type { LeaderTerm } from '../leadership/leader-election.js';
import type { PoolPodCensus, PoolPodEntry } from './pool-pod-census.js';
import { poolOf, type PoolPodState, type PoolSandbox } from './pool-pods.js';

export const REPLACEABLE_STATES = ['missing', 'stale'] as const;
export type ReplaceableState = (typeof REPLACEABLE_STATES)[number];

/** Returns of a pod in the state it was replaced for, in a row in one pool, that stop the pool's replacement. */
export const LOOP_LIMIT = 2;
/** A replacement that failed on an API error is tried again after this. */
const RETRY_MS = 10_000;

/** The most replacements in flight in one pool: a count, or a share of its judged pods (at least one). */
export type PerPoolBound = { kind: 'count'; count: number } | { kind: 'percent'; percent: number };

export interface ReplacementSettings {
  states: ReadonlySet<ReplaceableState>;
  maxAtOnce: number;
  maxPerPool: PerPoolBound;
  readyTimeoutMs: number;
}

export interface ReplacementApi {
  /** The Sandbox as stored now, read from the API server; undefined when it does not exist. */
  readSandbox(namespace: string, name: string): Promise<PoolSandbox | undefined>;
  /** Deletes the pod only while it has this UID and resourceVersion (delete preconditions). */
  deletePod(
    namespace: string,
    name: string,
    uid: string,
    resourceVersion: string,
  ): Promise<'deleted' | 'changed' | 'gone'>;
}

export type ReplacementReport =
  | { kind: 'replaced'; entry: PoolPodEntry; pool: string }
  /** Claimed in the moment between the re-read and the delete: said, as it cannot be undone. */
  | { kind: 'claimed-meanwhile'; entry: PoolPodEntry; pool: string }
  /** Not deleted after all: the re-read or the precondition said no. */
  | { kind: 'skipped'; entry: PoolPodEntry; pool: string; why: string }
  | { kind: 'failed'; entry: PoolPodEntry; pool: string; problem: string }
  | { kind: 'stopped'; entry: PoolPodEntry; pool: string; state: ReplaceableState; why: string }
  | { kind: 'timed-out'; pool: string; podUid: string; cameBack: boolean }
  | { kind: 'resumed'; pool: string };

export interface ReplacementFigures {
  inFlight: number;
  stoppedPools: number;
}

export interface PoolReplacementDeps {
  settings: ReplacementSettings;
  census: Pick<PoolPodCensus, 'entry' | 'all' | 'poolSize'>;
  api: ReplacementApi;
  clock: Clock;
  report: (report: ReplacementReport) => void;
}

/** One replacement: from its delete until the pod after it in the pool is Ready, or the timeout. */
interface InFlight {
  pool: string;
  /** The pod replaced, as judged when it was. */
  entry: PoolPodEntry;
  podUid: string;
  state: ReplaceableState;
  /** The pod that came next in the pool, once judged there. */
  successor: string | undefined;
  cancelTimer: () => void;
}

interface PoolState {
  candidates: Set<string>;
  inFlight: InFlight[];
  /** Pods that came back in the state their predecessor was replaced for, in a row. */
  strikes: number;
  stopped: boolean;
}

export class PoolReplacement {
  private term: LeaderTerm | undefined;
  private pools = new Map<string, PoolState>();
  /** Sandbox key -> the pool whose candidates hold it. */
  private candidateOf = new Map<string, string>();
  /** Successor pod UID -> its replacement. */
  private successors = new Map<string, InFlight>();
  private inFlight = 0;
  private pumping = false;
  private pumpAgain = false;

  constructor(private readonly deps: PoolReplacementDeps) {}

  /** A term began (every candidate is looked at) or ended (everything in flight is forgotten). */
  setTerm(term: LeaderTerm | undefined): void {
    for (const pool of this.pools.values()) for (const record of pool.inFlight) record.cancelTimer();
    this.term = term;
    this.pools = new Map();
    this.candidateOf = new Map();
    this.successors = new Map();
    this.inFlight = 0;
    if (term === undefined) return;
    for (const entry of this.deps.census.all()) this.consider(entry);
    this.pump();
  }

  /** The census judged a Sandbox anew (PoolPodCensus.listen). */
  observe(key: string, before: PoolPodEntry | undefined, after: PoolPodEntry | undefined): void {
    if (this.term === undefined) return;
    this.drop(key);
    const left = before !== undefined && (after === undefined || after.podUid !== before.podUid);
    if (left) {
      const record = this.successors.get(before.podUid);
      // The pod after a replacement was claimed or went before it was Ready: the pool has moved on.
      if (record !== undefined) this.release(record);
    }
    if (after !== undefined) {
      if (before === undefined || before.podUid !== after.podUid) this.arrived(after);
      const record = this.successors.get(after.podUid);
      if (record !== undefined && after.ready) this.release(record);
      this.consider(after);
    }
    this.pump();
  }

  /** The injection config changed: stopped pools are tried again, as the change may be the fix. */
  configChanged(): void {
    for (const [key, pool] of this.pools) {
      if (pool.stopped) this.deps.report({ kind: 'resumed', pool: key });
      pool.stopped = false;
      pool.strikes = 0;
    }
    this.pump();
  }

  figures(): ReplacementFigures {
    let stoppedPools = 0;
    for (const pool of this.pools.values()) if (pool.stopped) stoppedPools += 1;
    return { inFlight: this.inFlight, stoppedPools };
  }

  private consider(entry: PoolPodEntry): void {
    const pool = entry.pool?.key;
    if (pool === undefined || !this.replaceable(entry.state)) return;
    this.poolState(pool).candidates.add(entry.key);
    this.candidateOf.set(entry.key, pool);
  }

  private drop(key: string): void {
    const pool = this.candidateOf.get(key);
    if (pool === undefined) return;
    this.candidateOf.delete(key);
    this.pools.get(pool)?.candidates.delete(key);
    this.tidy(pool);
  }

  /** A pod new to its pool: the successor of the oldest replacement there that has none yet. */
  private arrived(entry: PoolPodEntry): void {
    const poolKey = entry.pool?.key;
    const pool = poolKey === undefined ? undefined : this.pools.get(poolKey);
    const record = pool?.inFlight.find((r) => r.successor === undefined && r.podUid !== entry.podUid);
    if (pool === undefined || poolKey === undefined || record === undefined) return;
    record.successor = entry.podUid;
    this.successors.set(entry.podUid, record);
    if (entry.state !== record.state) {
      pool.strikes = 0;
      return;
    }
    this.strike(poolKey, pool, entry, record.state, `pod ${entry.podUid} came back ${entry.state}: ${entry.reason}`);
  }

  private strike(poolKey: string, pool: PoolState, entry: PoolPodEntry, state: ReplaceableState, why: string): void {
    pool.strikes += 1;
    if (pool.strikes < LOOP_LIMIT || pool.stopped) return;
    pool.stopped = true;
    this.deps.report({ kind: 'stopped', entry, pool: poolKey, state, why });
  }

  /** Starts what the bounds allow. Re-entered (a release during a start), it runs again once it is done. */
  private pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        this.startWhatFits();
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
  }

  private startWhatFits(): void {
    const term = this.term;
    if (term === undefined || !term.fresh()) return;
    for (const [poolKey, pool] of [...this.pools]) {
      while (this.inFlight < this.deps.settings.maxAtOnce && this.mayStart(poolKey, pool)) {
        const key = pool.candidates.values().next().value as string;
        pool.candidates.delete(key);
        this.candidateOf.delete(key);
        const entry = this.deps.census.entry(key);
        if (entry === undefined || entry.pool?.key !== poolKey || !this.replaceable(entry.state)) continue;
        this.start(pool, entry, term);
      }
      this.tidy(poolKey);
      if (this.inFlight >= this.deps.settings.maxAtOnce) return;
    }
  }

  private mayStart(poolKey: string, pool: PoolState): boolean {
    return !pool.stopped && pool.candidates.size > 0 && pool.inFlight.length < this.perPool(poolKey);
  }

  private perPool(poolKey: string): number {
    const bound = this.deps.settings.maxPerPool;
    if (bound.kind === 'count') return bound.count;
    return Math.max(1, Math.floor((this.deps.census.poolSize(poolKey) * bound.percent) / 100));
  }

  private start(pool: PoolState, entry: PoolPodEntry, term: LeaderTerm): void {
    const record: InFlight = {
      pool: entry.pool?.key ?? '',
      entry,
      podUid: entry.podUid,
      state: entry.state as ReplaceableState,
      successor: undefined,
      cancelTimer: () => undefined,
    };
    pool.inFlight.push(record);
    this.inFlight += 1;
    void this.replace(record, entry, term);
  }

  private async replace(record: InFlight, entry: PoolPodEntry, term: LeaderTerm): Promise<void> {
    const [namespace = '', name = ''] = entry.key.split('/');
    try {
      if (!this.sendable(term)) return this.release(record);
      const stored = await this.deps.api.readSandbox(namespace, name);
      if (this.term !== term) return;
      const latest = this.deps.census.entry(entry.key);
      const why = unsafe(stored, entry, latest);
      if (why !== undefined || latest === undefined) {
        this.release(record);
        return this.deps.report({ kind: 'skipped', entry, pool: record.pool, why: why ?? 'no longer judged' });
      }
      if (!this.sendable(term)) return this.release(record);
      const result = await this.deps.api.deletePod(namespace, latest.podName, latest.podUid, latest.podVersion ?? '');
      if (this.term !== term) return;
      if (result !== 'deleted') {
        this.release(record);
        const why = result === 'gone' ? 'the pod is gone' : 'the pod changed since it was judged (delete precondition)';
        return this.deps.report({ kind: 'skipped', entry: latest, pool: record.pool, why });
      }
      record.cancelTimer = this.deps.clock.setTimer(() => this.timedOut(record), this.deps.settings.readyTimeoutMs);
      this.deps.report({ kind: 'replaced', entry: latest, pool: record.pool });
      const after = await this.deps.api.readSandbox(namespace, name);
      if (after !== undefined && isClaimed(after))
        this.deps.report({ kind: 'claimed-meanwhile', entry: latest, pool: record.pool });
    } catch (error) {
      if (this.term !== term) return;
      this.release(record);
      this.deps.report({ kind: 'failed', entry, pool: record.pool, problem: errorLine(error) });
      this.deps.clock.setTimer(() => this.retry(entry.key, term), RETRY_MS);
    }
  }

  private retry(key: string, term: LeaderTerm): void {
    const entry = this.deps.census.entry(key);
    if (this.term !== term || entry === undefined) return;
    this.consider(entry);
    this.pump();
  }

  /** No Ready successor within the timeout: the slot is freed; no successor at all counts as a bad return. */
  private timedOut(record: InFlight): void {
    const pool = this.pools.get(record.pool);
    if (pool === undefined || !pool.inFlight.includes(record)) return;
    const cameBack = record.successor !== undefined;
    this.deps.report({ kind: 'timed-out', pool: record.pool, podUid: record.podUid, cameBack });
    this.release(record);
    if (cameBack) return;
    const why = `pod ${record.podUid}, replaced for being ${record.state}, had no successor in the pool within the timeout`;
    this.strike(record.pool, pool, record.entry, record.state, why);
  }

  private release(record: InFlight): void {
    const pool = this.pools.get(record.pool);
    const index = pool?.inFlight.indexOf(record) ?? -1;
    if (pool === undefined || index < 0) return;
    pool.inFlight.splice(index, 1);
    this.inFlight -= 1;
    record.cancelTimer();
    if (record.successor !== undefined) this.successors.delete(record.successor);
    this.tidy(record.pool);
    this.pump();
  }

  private sendable(term: LeaderTerm): boolean {
    return this.term === term && term.fresh() && !term.signal.aborted;
  }

  private replaceable(state: PoolPodState): boolean {
    return (this.deps.settings.states as ReadonlySet<string>).has(state);
  }

  private poolState(key: string): PoolState {
    let pool = this.pools.get(key);
    if (pool === undefined) {
      pool = { candidates: new Set(), inFlight: [], strikes: 0, stopped: false };
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** A pool with nothing to do and nothing to remember is forgotten, so the map holds only pools at work. */
  private tidy(key: string): void {
    const pool = this.pools.get(key);
    if (
      pool !== undefined &&
      pool.candidates.size === 0 &&
      pool.inFlight.length === 0 &&
      pool.strikes === 0 &&
      !pool.stopped
    )
      this.pools.delete(key);
  }
}

/**
 * Why the pod must not be deleted after all, from the Sandbox as the API server has it now; undefined when it
 * may. `latest` is the cache's entry now: the pod must still be the one judged, in a state to replace.
 */
function unsafe(
  stored: PoolSandbox | undefined,
  judged: PoolPodEntry,
  latest: PoolPodEntry | undefined,
): string | undefined {
  if (stored === undefined) return 'the Sandbox is gone';
  if (isClaimed(stored)) return 'the Sandbox is claimed';
  const deleting = stored.metadata?.deletionTimestamp;
  if (deleting !== undefined && deleting !== null) return 'the Sandbox is being deleted';
  if (stored.spec?.paused === true) return 'the Sandbox is paused';
  if (poolOf(stored)?.uid !== judged.pool?.uid) return 'the Sandbox is no longer in its pool (a claim takes it out)';
  if (stored.status?.podInfo?.podUID !== judged.podUid) return 'the Sandbox names another pod';
  if (latest === undefined || latest.podUid !== judged.podUid || latest.state !== judged.state)
    return 'the pod was judged anew since';
  return undefined;
}
