/** What `explain --sandbox` reads of deliver-env's side, and what it makes of it. */
import type { ClaimDecision, ClaimSettings, DeliveryPod, DeliverySandbox } from '../../deliver/controller/claim.js';
import type { RecycledPodMode } from '../../deliver/controller/recycle.js';

/** An Event on the Sandbox as explain reads it back. */
export interface SandboxEventRecord {
  reason: string;
  type: string;
  message: string;
  /** When it was recorded: lastTimestamp, else eventTime, else its creation. */
  at: string | undefined;
  /** Who recorded it (source.component, or reportingComponent). */
  component: string | undefined;
  /** The API server's order of writes, to order Events recorded within one second. */
  resourceVersion: string | undefined;
}

/** deliver-env's Lease as read: held by whom until when, or why it cannot be told. */
export type LeaseFacts =
  | { state: 'held'; name: string; holder: string; endsAt: number }
  | { state: 'not-held'; name: string; why: string }
  | { state: 'unknown'; name: string; why: string };

export interface DeliveryFacts {
  sandbox: DeliverySandbox;
  /** Pods of the Sandbox's namespace labelled as the Sandbox controller's; those it controls are the candidates. */
  pods: readonly DeliveryPod[];
  /** undefined when they could not be read (the reason is in `eventsProblem`). */
  events: readonly SandboxEventRecord[] | undefined;
  eventsProblem?: string;
  lease: LeaseFacts;
  settings: ClaimSettings;
  recycledPods: RecycledPodMode;
  /** Wall time of the reads, ms since the epoch: the Lease is judged against it. */
  now: number;
}

/** Whether the claim's env is in the pod, as far as deliver-env's Events tell. */
export type EnvState = 'delivered' | 'not-delivered' | 'cleared' | 'not-cleared' | 'none';

export interface DeliveryExplanation {
  leader: { state: LeaseFacts['state']; lease: string; holder?: string; why?: string };
  claimed: boolean;
  /** How it is claimed, and when (the claim-timestamp annotation), when it is. */
  claim?: { by: string[]; at?: string };
  /** The pod the claim goes to (unclaimed: the one an earlier claim's files are cleared from), or why none. */
  pod: { name: string; uid: string; why: string } | { name?: undefined; uid?: string; why: string };
  /** deliver-env's decision, by its name in src/deliver/controller/claim.ts, and what it comes to. */
  decision: { kind: ClaimDecision['kind']; case?: string; detail: string };
  lastEvent?: { reason: string; type: string; message: string; at?: string };
  env: EnvState;
  next: string[];
  notes: string[];
}
