/** What one reconcile of a Sandbox came to: what the metrics, the log and the Events are made from. */
import { DELIVERY_FAILURES } from '../../errors/index.js';
import type { EnvdErrorKind } from '../envd/envd-files.js';
import type { UndecidedCase } from '../../sandbox/pod-identity.js';

/** The catalogue's failure of each refusal, by the name the decision gives it. */
export const REFUSALS = {
  EnvRequestRefused: DELIVERY_FAILURES.envRequestRefused,
  RuntimeUrlRefused: DELIVERY_FAILURES.runtimeUrlRefused,
  RuntimeTlsUnconfigured: DELIVERY_FAILURES.runtimeTlsUnconfigured,
  RuntimeTlsRequired: DELIVERY_FAILURES.runtimeTlsRequired,
  EnvPodRecycled: DELIVERY_FAILURES.podRecycled,
} as const;

export type RefusalReason = keyof typeof REFUSALS;

export type FailureReason = Exclude<EnvdErrorKind, 'aborted'> | 'refused';

/** What a write was for: a new claim, a changed one, a new pod of a claim (resume, recreate), a claim without request, or a claim's end. */
export const DELIVERY_KINDS = ['claim', 'change', 'resume', 'empty', 'cleared'] as const;
export type DeliveryKind = (typeof DELIVERY_KINDS)[number];

/** The Event reason of a failure: the refusal's own, or one of delivery's. */
export type FailureEvent = RefusalReason | 'EnvDeliveryFailed' | 'EnvNotCleared';

export type DeliveryOutcome =
  | {
      kind: 'delivered';
      key: string;
      podUid: string;
      delivery: DeliveryKind;
      variables: number;
      requests: number;
      /** From the Sandbox's claim timestamp (whole seconds upstream) to .env_ready written; first claims only. */
      claimToReadyMs: number | undefined;
      /** From this controller first seeing what called for this write to the write done (monotonic). */
      seenToReadyMs: number;
    }
  | { kind: 'unchanged'; key: string; podUid: string; requests: number }
  /** Nothing sent: the Sandbox's pod could not be decided by identity (pod-identity.ts says each case). */
  | { kind: 'held'; key: string; podUid: string | undefined; case: UndecidedCase; reason: string }
  | {
      kind: 'failed';
      key: string;
      podUid: string | undefined;
      reason: FailureReason;
      event: FailureEvent;
      /** The failure's code in the catalogue (docs/errors.md). */
      code: string;
      /** Names what failed, never a value or a token. */
      message: string;
      /** False: not until the Sandbox or its pod changes. */
      retrying: boolean;
      /** The first failure since the last success: Events are made for these only. */
      firstOfStreak: boolean;
    };
