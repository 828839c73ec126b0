/**
 * How many cases a property test draws. `npm test` draws a tenth, so it passes on a busy laptop in seconds;
 * `PROPERTY_RUNS=full` (CI and `npm run test:property`) draws them all. Timeouts follow the count, never a
 * guess at the machine's speed.
 */
export const FULL_RUNS = process.env.PROPERTY_RUNS === 'full';

export function propertyRuns(full: number): number {
  return FULL_RUNS ? full : Math.max(50, Math.ceil(full / 10));
}

/** A generous per-case budget (a loaded 2-core machine runs a case in a few ms) plus a fixed base. */
export function propertyTimeout(runs: number, msPerRun = 25): number {
  return 30_000 + runs * msPerRun;
}
