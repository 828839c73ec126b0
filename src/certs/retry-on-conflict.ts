/**
 * Writes that race other replicas. Every write to the Secret or the webhook configuration carries the
 * resourceVersion it was read at, so a writer that came between our read and our write makes ours fail
 * with 409 Conflict; reading again and deciding again on what the other wrote is then the whole remedy.
 */
import { ApiException } from '@kubernetes/client-node';
import { STARTUP_ERRORS } from '../errors/index.js';

/** Reads and writes per call before giving up: writers that keep winning this often are not replicas. */
const CONFLICT_ATTEMPTS = 5;

/**
 * Runs `attempt` (read, decide, write) again on 409 Conflict, up to CONFLICT_ATTEMPTS times in all.
 * `onConflict` hears of each conflict; `what` names the object in the error when every attempt conflicted.
 */
export async function retryOnConflict<T>(
  what: string,
  attempt: (n: number) => Promise<T>,
  onConflict: (n: number) => void = () => undefined,
): Promise<T> {
  for (let n = 1; n <= CONFLICT_ATTEMPTS; n += 1) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!isStatus(error, 409)) throw error;
      onConflict(n);
    }
  }
  throw new STARTUP_ERRORS.certificateConflict.Error(what, CONFLICT_ATTEMPTS);
}

/** Whether `error` is the API server's answer with this HTTP status. */
export function isStatus(error: unknown, code: number): boolean {
  return error instanceof ApiException && error.code === code;
}
