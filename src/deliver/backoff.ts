/** Capped exponential backoff with full jitter: pure, the random source passed in. */
export interface BackoffSettings {
  minMs: number;
  maxMs: number;
}

/** The wait before retry number `failures` (1 for the first retry): uniform in [ceiling/2, ceiling]. */
export function backoffDelay(failures: number, settings: BackoffSettings, random: () => number): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 30);
  const ceiling = Math.min(settings.maxMs, settings.minMs * 2 ** exponent);
  // Half fixed, half random: retries spread out without ever collapsing to an immediate retry.
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
