import fastJsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import type { Pod } from '../injection/index.js';

/**
 * RFC 6902 operations that turn `original` into `mutated`. The injection shares unchanged subtrees by
 * reference, and the diff skips identical references, so this costs what changed rather than the pod's size.
 * Paths are escaped (`~` -> `~0`, `/` -> `~1`) by the diff itself, in one place.
 */
export function diffPods(original: Pod, mutated: Pod): Operation[] {
  return fastJsonPatch.compare(original, mutated);
}

export function encodePatch(operations: readonly Operation[]): string {
  return Buffer.from(JSON.stringify(operations)).toString('base64');
}
