/**
 * The controller's memory, in one place: what it knows of each Sandbox besides the caches, and every way that
 * changes.
 *
 * - TermMemory: what one leadership term has learned, one record per Sandbox. It is dropped with the term, so a
 *   request that finishes after its term ended records nothing anywhere. It is only a shortcut: the truth is in
 *   the pod (.env_ready's marker), which a new term reads.
 * - SeenClaims: the last claimed version of each Sandbox that this process saw, leading or not, kept across
 *   terms. It is the one thing known only from memory: the token clearing needs once the claim's annotations are
 *   gone, and the pod the claim was in. A replica elected after the claim clears with it all the same.
 *
 * A record changes only through the transitions named below, each of which says what it is for.
 */
import type { Failure } from '../../errors/index.js';
import { claimToken, isClaimed, type DeliverySandbox } from './claim.js';
import type { EnvdError } from '../envd/envd-files.js';
import type { DeliveryOutcome, FailureEvent, FailureReason } from './outcome.js';
import type { ReconcileResult } from './work-queue.js';

/** What one term knows of one Sandbox. */
export interface SandboxRecord {
  /** `podUid url marker` delivered. */
  readonly delivered?: string;
  /** `podUid url` found clear. */
  readonly cleared?: string;
  /** The pod last delivered to: a later pod of the same claim is a resume. */
  readonly lastPod?: string;
  /** The inputs of a refusal: nothing is tried until they change. */
  readonly blocked?: string;
  /** The inputs of an attempt that failed and is being retried. */
  readonly failing?: string;
  /** When the current want was first seen (monotonic), and what it was. */
  readonly firstSeen?: { readonly want: string; readonly at: number };
  /** The inputs of a pod that could not be decided, and whether a Warning said so. */
  readonly held?: { readonly inputs: string; readonly reported: boolean };
  /** The inputs on which a claim began to wait for a recycled pod's containers to restart (recycle.ts). */
  readonly restartWait?: string;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const NOTHING: SandboxRecord = Object.freeze({});

export class TermMemory {
  private readonly records = new Map<string, Mutable<SandboxRecord>>();

  /** What this term knows of `key`. */
  of(key: string): SandboxRecord {
    return this.records.get(key) ?? NOTHING;
  }

  /** The Sandbox is gone: nothing of it is kept. */
  forget(key: string): void {
    this.records.delete(key);
  }

  /**
   * The inputs a key waiting out a backoff or a grace (a hold's, a recycled pod's restart) was last decided on,
   * if it waits: a change during the wait runs the key early, and it goes on only if its inputs are not these.
   */
  waitingOn(key: string): string | undefined {
    const record = this.of(key);
    return record.failing ?? record.held?.inputs ?? record.restartWait;
  }

  /** What a waiting key would be decided on changed: its failure streak is over, and it goes on at once. */
  inputsChanged(key: string): void {
    this.change(key, (record) => delete record.failing);
  }

  /**
   * A decision was made on `inputs`: a refusal of other inputs no longer holds, and a hold ends unless this one
   * is held too. True when these very inputs were refused: nothing is tried.
   */
  decided(key: string, inputs: string, held: boolean): boolean {
    if (this.of(key).blocked === inputs) return true;
    this.change(key, (record) => {
      delete record.blocked;
      if (!held) delete record.held;
    });
    return false;
  }

  /** Nothing is wanted of the pod now (a wait, a hold, a clearing): a later want is timed from when it is seen. */
  wantsNothing(key: string): void {
    this.change(key, (record) => delete record.firstSeen);
  }

  /** `want` is wanted: when it was first seen, `since` unless it was seen before. */
  wants(key: string, want: string, since: number): number {
    const seen = this.of(key).firstSeen;
    const at = seen?.want === want ? seen.at : since;
    this.change(key, (record) => (record.firstSeen = { want, at }));
    return at;
  }

  /** The pod could not be decided on `inputs`; `reported` once a Warning said so. */
  holding(key: string, inputs: string, reported: boolean): void {
    this.change(key, (record) => (record.held = { inputs, reported }));
  }

  /**
   * A claim found its pod recycled, and its containers not restarted since, on `inputs`. True the first time
   * for these inputs: it waits out the grace. False once it has: the wait is over, and is refused.
   */
  awaitsRestart(key: string, inputs: string): boolean {
    if (this.of(key).restartWait === inputs) return false;
    this.change(key, (record) => (record.restartWait = inputs));
    return true;
  }

  /** `want` is in pod `podUid`. Returns the pod delivered to before, if any: another pod is a resume. */
  delivered(key: string, want: string, podUid: string): string | undefined {
    const previous = this.of(key).lastPod;
    this.change(key, (record) => {
      record.delivered = want;
      record.lastPod = podUid;
      delete record.cleared;
      delete record.failing;
      delete record.firstSeen;
      delete record.restartWait;
    });
    return previous;
  }

  /** The pod holds no claim's files (`done`: `podUid url`). */
  cleared(key: string, done: string): void {
    this.change(key, (record) => {
      record.cleared = done;
      delete record.delivered;
      delete record.failing;
      delete record.restartWait;
    });
  }

  /** An attempt on `inputs` failed and is retried. True for the first failure since the last success. */
  failedOn(key: string, inputs: string): boolean {
    const first = this.of(key).failing === undefined;
    this.change(key, (record) => (record.failing = inputs));
    return first;
  }

  /** Nothing more is tried on `inputs`: the next change of the Sandbox or its pod is. */
  refusedOn(key: string, inputs: string): void {
    this.change(key, (record) => {
      record.blocked = inputs;
      delete record.failing;
    });
  }

  private change(key: string, edit: (record: Mutable<SandboxRecord>) => unknown): void {
    const record = this.records.get(key) ?? {};
    edit(record);
    if (Object.keys(record).length === 0) this.records.delete(key);
    else this.records.set(key, record);
  }
}

/** A Sandbox's last claim as this process saw it. */
export interface LastClaim {
  /** Its access token, if it had one: what clearing authenticates with once the claim's annotations are gone. */
  token: string | undefined;
  /** The pod it was seen with (`status.podInfo.podUID`): a pod that served it is marked recycled when cleared. */
  podUid: string | undefined;
}

/**
 * The last claim of each Sandbox this process saw, leading or not; see the top of this file. While the claim is
 * on, the claimed version itself (the cache's own object: nothing copied or parsed on the event path); once it
 * ends, only its token and pod, so that a recycled pool does not keep each ended claim's request annotations.
 */
export class SeenClaims {
  private readonly claimed = new Map<string, DeliverySandbox>();
  private readonly ended = new Map<string, LastClaim>();

  /**
   * A change of `key` was seen. Kept until the next claim or the Sandbox's deletion, after clearing too: envd
   * keeps the token it was initialised with until its container restarts, and a later term may list again.
   */
  saw(key: string, sandbox: DeliverySandbox | undefined): void {
    if (sandbox === undefined) {
      this.claimed.delete(key);
      this.ended.delete(key);
    } else if (isClaimed(sandbox)) {
      this.claimed.set(key, sandbox);
      this.ended.delete(key);
    } else {
      const last = this.claimed.get(key);
      if (last === undefined) return;
      this.ended.set(key, summary(last));
      this.claimed.delete(key);
    }
  }

  /** The Sandbox's last claim as this process saw it; undefined when it saw none. */
  lastClaim(key: string): LastClaim | undefined {
    const on = this.claimed.get(key);
    return on === undefined ? this.ended.get(key) : summary(on);
  }
}

function summary(sandbox: DeliverySandbox): LastClaim {
  const podUid = sandbox.status?.podInfo?.podUID;
  return { token: claimToken(sandbox), podUid: typeof podUid === 'string' ? podUid : undefined };
}

/** One reconcile's view of its Sandbox: the key, what the decision was made from, and where it reports. */
export interface Attempt {
  memory: TermMemory;
  key: string;
  inputs: string;
  podUid: string;
  report: (outcome: DeliveryOutcome) => void;
}

/** An envd failure: retried with backoff when envd could not be reached, else held until something changes. */
export function failed(attempt: Attempt, error: EnvdError, event: FailureEvent): ReconcileResult {
  if (error.kind === 'aborted') return { kind: 'done' };
  if (error.kind !== 'unavailable') return refuse(attempt, error.kind, event, error);
  const { memory, key, podUid } = attempt;
  const firstOfStreak = memory.failedOn(key, attempt.inputs);
  attempt.report({
    kind: 'failed',
    key,
    podUid,
    reason: 'unavailable',
    event,
    code: error.code,
    message: error.message,
    retrying: true,
    firstOfStreak,
  });
  return { kind: 'retry' };
}

/** Nothing more is tried for these inputs: the next change of the Sandbox or its pod is. */
export function refuse(
  attempt: Attempt,
  reason: FailureReason,
  event: FailureEvent,
  { code, message }: Pick<Failure, 'code' | 'message'>,
): ReconcileResult {
  const { memory, key, podUid } = attempt;
  memory.refusedOn(key, attempt.inputs);
  attempt.report({ kind: 'failed', key, podUid, reason, event, code, message, retrying: false, firstOfStreak: true });
  return { kind: 'done' };
}
