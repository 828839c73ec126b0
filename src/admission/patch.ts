import type { EditOperation } from '../injection/index.js';

/**
 * The patch as kube-apiserver wants it: base64 of the JSON text of the operations the injection recorded as it
 * edited (src/injection/editor.ts).
 *
 * One JSON.stringify of the whole list, rather than text assembled from pieces made once per config version:
 * most of a patch is the pod's own commands and args, repeated after the wrapper, which no cache can hold, and
 * on the bench's review one native call over the whole list beat a few hundred small ones (docs/benchmark.md).
 * The UTF-8 text goes through a buffer of its own each time: a scratch buffer kept between calls saved too
 * little to measure in a review, and held on to three times the largest patch ever made.
 */
export function encodePatch(operations: readonly EditOperation[]): string {
  return Buffer.from(JSON.stringify(operations), 'utf8').toString('base64');
}
