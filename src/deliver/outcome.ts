/** What one reconcile of a Sandbox came to: what the metrics, the log and the Events are made from. */
import type { EnvdErrorKind } from './envd-files.js';

export type FailureReason = EnvdErrorKind | 'refused';

export type DeliveryOutcome =
  | {
      kind: 'delivered';
      key: string;
      podUid: string;
      variables: number;
      requests: number;
      /** From the Sandbox's claim timestamp to .env_ready written, when the Sandbox says when it was claimed. */
      claimToReadyMs: number | undefined;
      rewrite: boolean;
    }
  | { kind: 'unchanged'; key: string; podUid: string; requests: number }
  | {
      kind: 'failed';
      key: string;
      podUid: string | undefined;
      reason: FailureReason;
      /** Names what failed, never a value or a token. */
      message: string;
      /** When it is retried; undefined: not until the Sandbox or its pod changes. */
      retryInMs: number | undefined;
      /** The first failure since the last success: Events are made for these only. */
      firstOfStreak: boolean;
    };
