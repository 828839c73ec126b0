/** The order statistics the bench and the soak print, one definition each so that their figures compare. */

/** The nearest-rank quantile of values sorted ascending: the smallest value with at least q of them at or below. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}

/** The middle value, the upper of the two middle ones for an even count. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}
