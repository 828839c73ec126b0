import type { EditOperation } from '../injection/index.js';

/** Kept between calls: the UTF-8 text of a patch lives here only until its base64 is made. */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

/**
 * The patch as kube-apiserver wants it: base64 of the JSON text of the operations the injection recorded as it
 * edited (src/injection/editor.ts). The text is encoded to UTF-8 into one buffer kept for the purpose, so a patch
 * allocates its JSON text and its base64 and nothing in between.
 *
 * One JSON.stringify of the whole list, rather than text assembled from pieces made once per config version:
 * most of a patch is the pod's own commands and args, repeated after the wrapper, which no cache can hold, and
 * on the bench's review assembling pieces (frozen config fragments from a cache, strings quoted by hand) took
 * 51 µs where the one JSON.stringify takes 38 (docs/benchmark.md).
 */
export function encodePatch(operations: readonly EditOperation[]): string {
  const text = JSON.stringify(operations);
  // A UTF-16 code unit never takes more than 3 bytes of UTF-8.
  if (text.length * 3 > scratch.length) scratch = Buffer.allocUnsafeSlow(text.length * 3);
  const bytes = scratch.write(text, 0, 'utf8');
  return scratch.toString('base64', 0, bytes);
}
