import type { ConfigSnapshot } from '../../admission/ports.js';

/**
 * A ConfigMap key as the review reads it: `valid`; `last-valid` (the current value is bad and an earlier valid
 * version is used, with a warning); `invalid` (bad and never seen valid: a runtime asking for it is denied);
 * `missing` (no key, or an empty one: also denied).
 */
export type KeyState = 'valid' | 'last-valid' | 'invalid' | 'missing';

export interface KeyReport {
  key: string;
  state: KeyState;
  /** Why the current value is bad, for `last-valid` and `invalid`. */
  error?: string;
}

export function keyReport(snapshot: ConfigSnapshot & { present: true }, key: string): KeyReport {
  const entry = snapshot.entries.get(key);
  if (entry === undefined) return { key, state: 'missing' };
  if (entry.error === undefined) return { key, state: 'valid' };
  return { key, state: entry.config === undefined ? 'invalid' : 'last-valid', error: entry.error };
}
