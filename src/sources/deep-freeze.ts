/**
 * Configs are shared by every admission; freezing them turns an accidental write into a loud error.
 *
 * Objects are frozen, arrays are not (their elements are, all the way down). Config values go into patches by
 * reference, and V8's fast path for JSON.stringify (on Node 26, not on Node 20) takes only arrays of the ordinary
 * element kinds: one frozen array sends a whole patch down the slow path, 2.2 times the time on the bench's
 * review (docs/benchmark.md). The tests freeze arrays too (test/support/freeze-all.ts), so an edit that writes
 * into one fails there.
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (const element of value) deepFreeze(element);
  } else if (!Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
