/**
 * The one backoff of the code base: capped exponential with equal jitter, pure, the random source passed in.
 * Half of each wait is fixed and half random, so retries of many keys (or of many replicas) spread out without
 * ever collapsing to an immediate retry, which full jitter can draw. Each user passes its own bounds: the
 * deliveries' work queue, the watches' restarts and the self-managed certificates' failed passes.
 */
export interface BackoffSettings {
  /** The ceiling of the first retry's wait. */
  minMs: number;
  /** The ceiling no wait goes past, however many failures came in a row. */
  maxMs: number;
}

/** The wait before retry number `failures` (1 for the first retry): uniform in [ceiling/2, ceiling]. */
export function backoffDelay(failures: number, settings: BackoffSettings, random: () => number): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 30);
  const ceiling = Math.min(settings.maxMs, settings.minMs * 2 ** exponent);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
