import type { EditOperation } from '../injection/index.js';

/**
 * The patch as kube-apiserver wants it: base64 of the JSON text of the operations the injection recorded as it
 * edited (src/injection/editor.ts), encoded to UTF-8 once and to base64 once.
 *
 * One JSON.stringify of the whole list, rather than text assembled from pieces made once per config version:
 * most of a patch is the pod's own commands and args, repeated after the wrapper, which no cache can hold, and
 * on the bench's review assembling pieces (frozen config fragments from a cache, strings quoted by hand) took
 * 51 µs where the one JSON.stringify takes 38 (docs/benchmark.md, 2026-12-01).
 */
export function encodePatch(operations: readonly EditOperation[]): string {
  return Buffer.from(JSON.stringify(operations)).toString('base64');
}
