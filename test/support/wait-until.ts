/**
 * The one bounded wait of the tests, unit and e2e alike: it asks a probe again and again until the probe gives
 * what the test waits for, and fails at its deadline with a message that names what it waited for and the last
 * value the probe gave. No test writes a polling loop of its own (test/wait-until.test.ts holds every file to
 * that), so every wait for something asynchronous has a deadline and says what did not come.
 *
 * A probe that throws ends the wait with its error, as a failed `expect` would: a probe that may fail while
 * the thing starts (a connection refused) catches that itself and gives the reason as its value.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';

export interface WaitOptions<T> {
  /** What is waited for, as the failure names it: "timed out after 100 ms waiting for <what>". */
  readonly what: string;
  /** How long the wait may take in all. The probe is asked at least once, and once more at the deadline. */
  readonly timeoutMs: number;
  /** The pause between two asks, 10 ms unless given: longer for a probe that costs a process or a round trip. */
  readonly intervalMs?: number;
  /** Whether a value is the one waited for; by default any truthy value (not undefined, null, false, 0 or ''). */
  readonly until?: (value: T) => boolean;
  /** Asked after each value that falls short: an Error ends the wait at once (a process it waits on exited). */
  readonly giveUp?: () => Error | undefined;
  /** More for the timeout's message (a log's tail): called only when the wait fails. */
  readonly detail?: () => string;
}

/** The value a probe gives when it is done, under the default `until`. */
export type Found<T> = Exclude<T, undefined | null | false | 0 | ''>;

const DEFAULT_INTERVAL_MS = 10;

function present<T>(value: T): value is Found<T> {
  return Boolean(value);
}

/** A value as the failure quotes it: short enough to read, deep enough to see why it fell short. */
function shown(value: unknown): string {
  return inspect(value, { depth: 4, breakLength: Infinity, maxArrayLength: 20, maxStringLength: 2000 });
}

/** Resolves with the probe's first value that `until` accepts (by default: the first truthy one). */
export function waitUntil<T, U extends T>(
  probe: () => T | Promise<T>,
  options: WaitOptions<T> & { readonly until: (value: T) => value is U },
): Promise<U>;
export function waitUntil<T>(
  probe: () => T | Promise<T>,
  options: WaitOptions<T> & { readonly until: (value: T) => boolean },
): Promise<T>;
export function waitUntil<T>(probe: () => T | Promise<T>, options: WaitOptions<T>): Promise<Found<T>>;
export async function waitUntil<T>(probe: () => T | Promise<T>, options: WaitOptions<T>): Promise<T> {
  const done = options.until ?? present;
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const started = performance.now();
  let asks = 0;
  for (;;) {
    const value = await probe();
    asks += 1;
    if (done(value)) return value;
    const stop = options.giveUp?.();
    if (stop !== undefined) throw stop;
    const elapsed = performance.now() - started;
    if (elapsed >= options.timeoutMs) {
      const detail = options.detail === undefined ? '' : `\n${options.detail()}`;
      throw new Error(
        `timed out after ${options.timeoutMs} ms waiting for ${options.what} (asked ${asks} times); ` +
          `last seen: ${shown(value)}${detail}`,
      );
    }
    await sleep(Math.min(intervalMs, options.timeoutMs - elapsed));
  }
}
