/**
 * When self-managed certificates are brought up to date: a pass at start, then one per poll interval, and
 * one on each renewNow(). Passes never overlap; a failed pass is retried sooner, backing off per failure
 * (time/backoff.ts).
 * What a pass does is CertificateSync's business (certificate-sync.ts); this module only knows when.
 */
import type { RenewalRequest } from './plan.js';
import { backoffDelay, type BackoffSettings } from '../time/backoff.js';
import { sleepOn, type Clock } from '../time/clock.js';
import type { Logger } from '../logging/logger.js';

export interface PassOutcome {
  /** Something is not settled yet (configuration missing, files held back): look again soon. */
  retrySoon: boolean;
}

/** What the schedule drives; CertificateSync is one. */
export interface SyncPasses {
  pass(request: RenewalRequest): Promise<PassOutcome>;
  /** Whether the directory holds a serving pair the server can start with. */
  filesPresent(): Promise<boolean>;
}

export interface ScheduleTiming {
  pollIntervalMs: number;
  /**
   * The waits after failed passes in a row (time/backoff.ts). A pass that asks to look again soon waits five
   * times the minimum.
   */
  retry: BackoffSettings;
  /** The retry backoff's jitter. */
  random: () => number;
  clock: Clock;
}

export interface SyncSchedule {
  /** Resolves once a pass has left usable files; rejects only when stopped before that. */
  readonly ready: Promise<void>;
  /** Runs a pass with `request` after the one in progress; rejects with the pass's error. */
  renewNow(request: RenewalRequest): Promise<void>;
  /** Stops polling and waits for a pass in progress. */
  stop(): Promise<void>;
}

export function startSyncSchedule(sync: SyncPasses, timing: ScheduleTiming, logger: Logger): SyncSchedule {
  const { pollIntervalMs, retry, random, clock } = timing;
  const stopping = new AbortController();
  let markReady: () => void = () => undefined;
  let failReady: (error: Error) => void = () => undefined;
  let isReady = false;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = () => {
      isReady = true;
      resolve();
    };
    failReady = reject;
  });
  // Callers that never await `ready` must not see an unhandled rejection when stop() comes first.
  ready.catch(() => undefined);

  // One pass at a time: a renewNow() during a poll runs after it, on the Secret that poll left.
  let tail: Promise<unknown> = Promise.resolve();
  const serialized = (request: RenewalRequest): Promise<PassOutcome> => {
    const run = tail.then(async () => {
      const outcome = await sync.pass(request);
      if (!isReady && (await sync.filesPresent())) markReady();
      return outcome;
    });
    tail = run.catch(() => undefined);
    return run;
  };

  const loop = async (): Promise<void> => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      let waitMs = pollIntervalMs;
      try {
        const outcome = await serialized({});
        failures = 0;
        if (outcome.retrySoon) waitMs = Math.min(pollIntervalMs, retry.minMs * 5);
      } catch (error) {
        failures += 1;
        waitMs = backoffDelay(failures, retry, random);
        logger.error({ err: error, retryInMs: waitMs }, 'self-managed certificates: pass failed');
      }
      if (stopping.signal.aborted) break;
      // Until the first files are written, these retries are all `serve` waits for (its server starts after):
      // they keep the process alive, so that a Secret not there yet is waited for rather than ending it.
      await sleepOn(clock, waitMs, stopping.signal, { keepAlive: !isReady });
    }
  };
  const looping = loop();

  return {
    ready,
    async renewNow(request) {
      if (stopping.signal.aborted) throw new Error('self-managed certificates are stopped');
      await serialized(request);
    },
    async stop() {
      stopping.abort();
      await looping;
      await tail;
      if (!isReady) failReady(new Error('self-managed certificates stopped before they were ready'));
    },
  };
}
