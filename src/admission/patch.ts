import type { EditOperation } from '../injection/index.js';

/**
 * The patch as kube-apiserver wants it: base64 of the JSON text of the operations the injection recorded as it
 * edited (src/injection/editor.ts).
 *
 * One JSON.stringify of the whole list: most of a patch is the pod's own commands and args, repeated after the
 * wrapper, which no text made in advance can hold, and V8 serializes the list in one native call, on its fast
 * path while every value keeps to the rules of src/json/fast-json.ts (`npm run bench`, the in-process table's
 * "of which, its patch from the operations" column). Each call's UTF-8 goes into a buffer of its own, freed
 * with the answer: one kept between calls would hold on to the largest patch ever made.
 */
export function encodePatch(operations: readonly EditOperation[]): string {
  return Buffer.from(JSON.stringify(operations), 'utf8').toString('base64');
}
