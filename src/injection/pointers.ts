/**
 * The JSON pointers (RFC 6901) of the patch's operations, made once per process. Every admission of the same pod
 * shape writes the same paths (`/spec/containers/3/livenessProbe/exec/command` and the like): on the bench's
 * 15 KB review, making them afresh for each operation was over a quarter of the review's decisions, about 19 of
 * 67 µs (docs/benchmark.md). So a pointer made is kept, under its parent and its last part, and the next
 * admission looks it up instead.
 *
 * Bounded: at most MAX_KEPT pointers of at most MAX_KEPT_LENGTH characters are kept, under a megabyte with the
 * maps around them, whatever the pods (docs/install.md, "Memory"). Past the bound a pointer is made as before and
 * not kept, so a stream of pods with ever new paths costs what it did before the cache, no more. The paths of a
 * pod are short (the longest a wrap writes, `/spec/containers/N/readinessProbe/exec/command`, is under 50).
 *
 * Every pointer is a flat string, made by a join rather than a concatenation: V8 keeps a concatenation of 13
 * characters or more as a rope (a cons string), and on Node 26 JSON.stringify's fast path takes flat strings only,
 * so a patch whose paths were ropes took 2.4 times as long to stringify (docs/benchmark.md).
 */
import { escapePointer } from '../util/json-pointer.js';

/** One step of a path into the pod: an object key or an array index. */
export type Segment = string | number;

const MAX_KEPT = 4096;
const MAX_KEPT_LENGTH = 128;

/**
 * Pointers kept, by the pointer they extend, then by what extends it: a segment as the caller has it (so a hit
 * escapes nothing and turns no index into a string), or (`under`) a pointer below.
 */
const children = new Map<string, Map<Segment, string>>();
const under = new Map<string, Map<string, string>>();
let keptCount = 0;

/** Keeps `pointer`, made for `tail` under `base`, unless the bound is reached; returns it either way. */
function keep<K extends Segment>(kept: Map<string, Map<K, string>>, base: string, tail: K, pointer: string): string {
  if (keptCount >= MAX_KEPT || pointer.length > MAX_KEPT_LENGTH) return pointer;
  const below = kept.get(base);
  if (below === undefined) kept.set(base, new Map([[tail, pointer]]));
  else below.set(tail, pointer);
  keptCount += 1;
  return pointer;
}

/** The pointer of `segment` under `parent`. */
export function childPointer(parent: string, segment: Segment): string {
  return children.get(parent)?.get(segment) ?? keep(children, parent, segment, [parent, token(segment)].join('/'));
}

/** `below`, a pointer relative to `base` (it starts with a slash), as a pointer from the root. */
export function pointerUnder(base: string, below: string): string {
  return under.get(base)?.get(below) ?? keep(under, base, below, [base, below].join(''));
}

export function pointerOf(path: readonly Segment[]): string {
  let pointer = '';
  for (const segment of path) pointer = childPointer(pointer, segment);
  return pointer;
}

/** One JSON pointer token (RFC 6901). */
export function token(segment: Segment): string {
  return typeof segment === 'string' ? escapePointer(segment) : String(segment);
}

/** How many pointers are kept, for the test of the bound. */
export function keptPointers(): number {
  return keptCount;
}
