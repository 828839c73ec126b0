// Reading what kubectl and the API server answer: parsed JSON (or YAML) of no declared type.

/** Walks a parsed value; undefined when any step is missing. */
export function at(value: unknown, ...keys: (string | number)[]): unknown {
  let v = value;
  for (const k of keys) {
    if (typeof k === 'number') {
      if (!Array.isArray(v)) return undefined;
      v = (v as unknown[])[k];
    } else {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
      v = (v as Record<string, unknown>)[k];
    }
  }
  return v;
}
