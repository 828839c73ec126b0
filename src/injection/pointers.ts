/**
 * The JSON pointers (RFC 6901) of the patch's operations, kept between admissions. Every admission of the same
 * pod shape writes the same paths (`/spec/containers/3/livenessProbe/exec/command` and the like), and making
 * them afresh for each operation is a large part of deciding a review (`npm run bench`, the in-process table's
 * "injecting" column). So a pointer made is kept, under its parent and its last part, and the next admission
 * looks it up instead. Whoever reviews many pods owns one cache for all of them (the server's app, a CLI
 * command) and hands it to each injection.
 *
 * Bounded: at most MAX_KEPT pointers of at most MAX_KEPT_LENGTH characters are kept, under a megabyte with the
 * maps around them, whatever the pods (docs/server.md, "Memory"). Past the bound a pointer is made as before and
 * not kept, so a stream of pods with ever new paths costs what it would without the cache, no more. The paths
 * of a pod are short (the longest a wrap writes, `/spec/containers/N/readinessProbe/exec/command`, is under 50).
 *
 * Every pointer goes into a patch, so each is made a flat string (flatJoin).
 */
import { flatJoin } from '../json/fast-json.js';
import { escapePointer } from '../json/json-pointer.js';

/** One step of a path into the pod: an object key or an array index. */
export type Segment = string | number;

const MAX_KEPT = 4096;
const MAX_KEPT_LENGTH = 128;

export class JsonPointers {
  /**
   * Pointers kept, by the pointer they extend, then by what extends it: a segment as the caller has it (so a hit
   * escapes nothing and turns no index into a string), or (`below`) a pointer below.
   */
  private readonly children = new Map<string, Map<Segment, string>>();
  private readonly below = new Map<string, Map<string, string>>();
  private count = 0;

  /** The pointer of `segment` under `parent`. */
  child(parent: string, segment: Segment): string {
    return (
      this.children.get(parent)?.get(segment) ??
      this.keep(this.children, parent, segment, flatJoin([parent, token(segment)], '/'))
    );
  }

  /** `below`, a pointer relative to `base` (it starts with a slash), as a pointer from the root. */
  under(base: string, below: string): string {
    return this.below.get(base)?.get(below) ?? this.keep(this.below, base, below, flatJoin([base, below]));
  }

  of(path: readonly Segment[]): string {
    let pointer = '';
    for (const segment of path) pointer = this.child(pointer, segment);
    return pointer;
  }

  /** How many pointers are kept. */
  get kept(): number {
    return this.count;
  }

  /** Keeps `pointer`, made for `tail` under `base`, unless the bound is reached; returns it either way. */
  private keep<K extends Segment>(kept: Map<string, Map<K, string>>, base: string, tail: K, pointer: string): string {
    if (this.count >= MAX_KEPT || pointer.length > MAX_KEPT_LENGTH) return pointer;
    const below = kept.get(base);
    if (below === undefined) kept.set(base, new Map([[tail, pointer]]));
    else below.set(tail, pointer);
    this.count += 1;
    return pointer;
  }
}

/** The pointer of `path`, made afresh and kept nowhere: for a path made once, a constant of the caller's. */
export function pointerOf(path: readonly Segment[]): string {
  return path.map((segment) => `/${token(segment)}`).join('');
}

/** One JSON pointer token (RFC 6901). */
export function token(segment: Segment): string {
  return typeof segment === 'string' ? escapePointer(segment) : String(segment);
}
