/**
 * What one leadership term has learned, and how a failure is recorded in it. A term's memory is dropped with
 * the term: a request that finishes after its term ended records nothing anywhere.
 */
import type { Failure } from '../errors/index.js';
import type { EnvdError } from './envd-files.js';
import type { DeliveryOutcome, FailureEvent, FailureReason } from './outcome.js';
import type { ReconcileResult } from './work-queue.js';

export class TermMemory {
  /** key -> `podUid url marker` delivered. */
  readonly delivered = new Map<string, string>();
  /** key -> `podUid url` found clear. */
  readonly cleared = new Map<string, string>();
  /** key -> the last pod delivered to: a later pod of the same claim is a resume. */
  readonly lastPod = new Map<string, string>();
  /** key -> the inputs of a refusal (or refused token): nothing until they change. */
  readonly blocked = new Map<string, string>();
  /** key -> the inputs of an attempt that failed and is being retried. */
  readonly failing = new Map<string, string>();
  /** key -> when the current want was first seen, and what it was. */
  readonly firstSeen = new Map<string, { want: string; at: number }>();
  /** key -> the inputs of a pod that could not be decided, and whether that was reported. */
  readonly held = new Map<string, { inputs: string; reported: boolean }>();

  /** The Sandbox is gone: nothing of it is kept. */
  forget(key: string): void {
    for (const map of [
      this.delivered,
      this.cleared,
      this.lastPod,
      this.blocked,
      this.failing,
      this.firstSeen,
      this.held,
    ])
      map.delete(key);
  }
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
  const firstOfStreak = !memory.failing.has(key);
  memory.failing.set(key, attempt.inputs);
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
  memory.blocked.set(key, attempt.inputs);
  memory.failing.delete(key);
  attempt.report({ kind: 'failed', key, podUid, reason, event, code, message, retrying: false, firstOfStreak: true });
  return { kind: 'wait-for-change' };
}
