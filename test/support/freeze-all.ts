/**
 * Freezes every object and array of a value, stricter than the config store (`deepFreezeObjects` in
 * src/json/fast-json.ts, which leaves arrays extensible for JSON.stringify's sake): under it, an edit that writes
 * into a shared value throws.
 */
export function freezeAll<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) freezeAll(child);
  }
  return value;
}
