/**
 * The pieces the pod editor (editor.ts) is made of: cursors over the objects it owns, and places for final edits.
 * Each records the RFC 6902 operation of every write it makes.
 */
import { childPointer, pointerOf, pointerUnder, type Segment } from './pointers.js';

/**
 * One edit, as the RFC 6902 operation that makes it. Applied in order to the original pod, the editor's
 * operations give the edited pod. A value is never changed after it is recorded: an edit below it copies it first.
 */
export type EditOperation = { op: 'add' | 'replace'; path: string; value: unknown };

/** An object or array of the pod, indexed by a segment. */
export type Node = Record<Segment, unknown>;

/** Children a cursor keeps in a list before it moves them to a Map: most cursors have one to four. */
const LIST_CHILDREN = 8;

/**
 * An object or array of the edited pod that the editor owns (a copy of the original's, or one it created), with
 * its JSON pointer. Writes through it are recorded. The cursors an edit walked through stay in a tree, one per
 * owned object, so that ownership is a lookup by key (no object identity is ever hashed) and the edits of one
 * container (its command, args, probes, mounts) are made from one cursor, with no walk from the pod's root.
 */
export class EditCursor {
  /** Owned children: a short list, or a Map once there are many (a pod's container list). */
  private children: EditCursor[] | Map<Segment, EditCursor> | undefined;

  constructor(
    private readonly record: (op: EditOperation['op'], path: string, value: unknown) => void,
    readonly key: Segment,
    readonly node: Node,
    readonly pointer: string,
  ) {}

  /**
   * The object (or, with `kind` 'array', the array) at `key`, made safe to write: copied if still shared with the
   * original or with a recorded value, created (and the creation recorded) when missing.
   */
  child(key: Segment, kind: 'object' | 'array' = 'object'): EditCursor {
    const current = this.node[key];
    const known = this.known(key);
    // A cursor whose object is no longer at its key was replaced by `set`: the new value is not ours.
    if (known !== undefined && known.node === current) return known;
    const pointer = childPointer(this.pointer, key);
    let copy: Node;
    if (current !== null && typeof current === 'object') {
      // Object.assign rather than a spread: V8 gives a spread clone a map of its own, outside the transition
      // tree, so each property the edit then adds made a new map (several times slower).
      copy = (Array.isArray(current) ? current.slice() : Object.assign({}, current)) as Node;
    } else {
      this.record(Object.hasOwn(this.node, key) ? 'replace' : 'add', pointer, kind === 'array' ? [] : {});
      copy = (kind === 'array' ? [] : {}) as Node;
    }
    this.node[key] = copy;
    const cursor = new EditCursor(this.record, key, copy, pointer);
    this.remember(cursor, known);
    return cursor;
  }

  /** Sets `key` to `value`, which from then on is the caller's and only ever copied, never written into. */
  set(key: Segment, value: unknown): void {
    this.record(Object.hasOwn(this.node, key) ? 'replace' : 'add', childPointer(this.pointer, key), value);
    this.node[key] = value;
  }

  /** Appends to this cursor's array. */
  append(values: readonly unknown[]): void {
    const list = this.node as unknown as unknown[];
    for (const value of values) {
      this.record('add', childPointer(this.pointer, list.length), value);
      list.push(value);
    }
  }

  private known(key: Segment): EditCursor | undefined {
    const children = this.children;
    if (children === undefined) return undefined;
    if (children instanceof Map) return children.get(key);
    for (const child of children) if (child.key === key) return child;
    return undefined;
  }

  private remember(cursor: EditCursor, stale: EditCursor | undefined): void {
    const children = this.children;
    if (children instanceof Map) {
      children.set(cursor.key, cursor);
    } else if (children === undefined) {
      this.children = [cursor];
    } else if (stale !== undefined) {
      children[children.indexOf(stale)] = cursor;
    } else if (children.length < LIST_CHILDREN) {
      children.push(cursor);
    } else {
      this.children = new Map([...children, cursor].map((c) => [c.key, c]));
    }
  }
}

/** A path below some object, with its JSON pointer made once (it is usually a constant of the caller's). */
export interface RelativePath {
  readonly segments: readonly Segment[];
  readonly pointer: string;
}

export function relativePath(segments: readonly Segment[]): RelativePath {
  return Object.freeze({ segments: Object.freeze([...segments]), pointer: pointerOf(segments) });
}

/** An object of the pod's view that final edits change (see PodEditor.finalPlace), read but never copied. */
export class FinalPlace {
  constructor(
    private readonly pointer: string,
    private readonly node: Node,
    private readonly record: (op: EditOperation['op'], path: string, value: unknown) => void,
  ) {}

  /** Sets the value at `below`, a path under this place whose parents exist. */
  set(below: RelativePath, value: unknown): void {
    const { segments } = below;
    let parent = this.node;
    for (let i = 0; i < segments.length - 1; i++) parent = parent[segments[i] as Segment] as Node;
    const key = segments[segments.length - 1] as Segment;
    this.record(Object.hasOwn(parent, key) ? 'replace' : 'add', pointerUnder(this.pointer, below.pointer), value);
  }

  /**
   * Replaces the value at `below`, which the caller has just read in the view: it exists, so there is nothing to
   * look up again (a probe's command is two lookups down, on objects of many shapes).
   */
  replace(below: RelativePath, value: unknown): void {
    this.record('replace', pointerUnder(this.pointer, below.pointer), value);
  }

  /** Appends to the array at `key` of this place, created when missing. */
  append(key: Segment, values: readonly unknown[]): void {
    if (values.length === 0) return;
    const pointer = childPointer(this.pointer, key);
    const current = this.node[key];
    let length = 0;
    if (Array.isArray(current)) length = current.length;
    else this.record(Object.hasOwn(this.node, key) ? 'replace' : 'add', pointer, []);
    for (const value of values) this.record('add', childPointer(pointer, length++), value);
  }
}
