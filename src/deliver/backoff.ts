/**
 * Capped exponential backoff with equal jitter: pure, the random source passed in. Half of each wait is fixed
 * and half random, so retries of many keys spread out without ever collapsing to an immediate retry (full
 * jitter can draw a wait of zero).
 */
export interface BackoffSettings {
  minMs: number;
  maxMs: number;
}

/** The wait before retry number `failures` (1 for the first retry): uniform in [ceiling/2, ceiling]. */
export function backoffDelay(failures: number, settings: BackoffSettings, random: () => number): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 30);
  const ceiling = Math.min(settings.maxMs, settings.minMs * 2 ** exponent);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
