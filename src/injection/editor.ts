import { unescapePointer } from '../json/json-pointer.js';
import { JsonPointers, pointerOf, type Segment } from './pointers.js';
import type { MetadataMap, Pod } from './types.js';

export type { Segment } from './pointers.js';

export type { MetadataMap };

/**
 * One edit, as the RFC 6902 operation that makes it. Applied in order to the original pod, the editor's
 * operations give the edited pod. A value is never changed after it is recorded: an edit below it copies it first.
 */
export type EditOperation = { op: 'add' | 'replace'; path: string; value: unknown };

/** An object or array of the pod, indexed by a segment. */
export type Node = Record<Segment, unknown>;

/**
 * Copy-on-write editing of a pod that records each edit as it makes it.
 *
 * Every object on the path to a change is shallow-copied once; everything else stays shared with the original,
 * which is never modified (nor is the cached injection config). Each write records the one operation that makes
 * it, so the patch is known when the edit ends, with no second walk comparing the two pods. The last edits of an
 * injection, which nothing reads, can be made as final edits (`finalPlace`): recorded, but copied into the view
 * only when the whole pod is asked for.
 *
 * Labels and annotations are the exception to copying: a pod may carry tens of thousands of annotations, and
 * the injection only ever adds one or two entries. Those entries are kept aside (read them through `entry`) and
 * merged into a copy of the map only when someone asks for the whole edited pod, which the webhook never does:
 * it needs only the operations.
 */
export class PodEditor {
  private root: EditCursor | undefined;
  private readonly recorded: EditOperation[] = [];
  private readonly added: Record<MetadataMap, Map<string, string>> = { labels: new Map(), annotations: new Map() };
  private merged: Pod | undefined;
  /**
   * Where the final edits begin in `recorded`, while the view does not have them yet: until then, no other edit
   * and no read of the view may follow.
   */
  private finalsFrom: number | undefined;
  /** While result() applies the final edits, which were recorded when they were made. */
  private replaying = false;
  private readonly recordOperation = (op: EditOperation['op'], path: string, value: unknown): void => {
    if (this.replaying) return;
    this.recorded.push({ op, path, value });
    this.merged = undefined;
  };

  /** `pointers` are kept across edits by whoever makes many (JsonPointers); without, this edit makes its own. */
  constructor(
    readonly original: Pod,
    private readonly pointers: JsonPointers = new JsonPointers(),
  ) {}

  /**
   * The pod as edited so far, but for entries added to labels and annotations: read those through `entry`.
   * Read-only: every write goes through the editor or a cursor it gave out.
   */
  get pod(): Pod {
    if (this.finalsFrom !== undefined) throw new Error('PodEditor: the view is not read after final edits');
    return this.view;
  }

  private get view(): Pod {
    return (this.root?.node as Pod | undefined) ?? this.original;
  }

  get changed(): boolean {
    return this.recorded.length > 0;
  }

  /** The operations that turn the original into the edited pod, in the order they were made. */
  get operations(): readonly EditOperation[] {
    return this.recorded;
  }

  /** The whole edited pod, labels and annotations included (the original itself when nothing changed). */
  result(): Pod {
    this.applyFinals();
    const view = this.view;
    if (this.added.labels.size === 0 && this.added.annotations.size === 0) return view;
    if (this.merged === undefined) {
      const metadata = { ...view.metadata };
      for (const field of ['labels', 'annotations'] as const) {
        if (this.added[field].size === 0) continue;
        const map: Record<string, string> = { ...metadata[field] };
        for (const [key, value] of this.added[field]) map[key] = value;
        metadata[field] = map;
      }
      this.merged = { ...view, metadata };
    }
    return this.merged;
  }

  /**
   * The owned object at `path` (an array at its end when `last` says so), for several writes below it; each
   * level is copied if still shared and created when missing.
   */
  at(path: readonly Segment[], last: 'object' | 'array' = 'object'): EditCursor {
    if (this.finalsFrom !== undefined && !this.replaying) throw new Error('PodEditor: no edit follows final edits');
    this.root ??= new EditCursor(this.recordOperation, this.pointers, '', Object.assign({}, this.original), '');
    let cursor = this.root;
    for (let i = 0; i < path.length; i++) {
      cursor = cursor.child(path[i] as Segment, i === path.length - 1 ? last : 'object');
    }
    return cursor;
  }

  /** Sets the value at `path`; its parents are created when missing. */
  set(path: readonly Segment[], value: unknown): void {
    this.at(path.slice(0, -1)).set(path[path.length - 1] as Segment, value);
  }

  /** Appends to the array at `path`, which is created when missing. */
  append(path: readonly Segment[], values: readonly unknown[]): void {
    if (values.length > 0) this.at(path, 'array').append(values);
  }

  /**
   * A place for final edits: the last edits of an injection, which nothing reads afterwards. Each is recorded at
   * once, but the view is left as it is, so nothing on its path is copied: a wrapped container, its probes and
   * their execs are not copied only to keep a view that no one reads again (`npm run bench`, the in-process
   * table's "injecting" column). `result()` applies them when the whole pod is asked for. Once one is made, only
   * more final edits may follow, and each must change a place that no other final edit changes or lies under.
   * `path` must exist in the view.
   */
  finalPlace(path: readonly Segment[]): FinalPlace {
    let node: unknown = this.view;
    for (const segment of path) node = (node as Node)[segment];
    this.finalsFrom ??= this.recorded.length;
    return new FinalPlace(this.pointers.of(path), node as Node, this.recordOperation, this.pointers);
  }

  /** Applies the final edits to the view, from the operations they recorded. */
  private applyFinals(): void {
    const from = this.finalsFrom;
    if (from === undefined) return;
    this.replaying = true;
    try {
      for (const { op, path, value } of this.recorded.slice(from)) {
        const tokens = path.slice(1).split('/').map(unescapePointer);
        let cursor = this.at([]);
        for (const name of tokens.slice(0, -1)) cursor = cursor.child(Array.isArray(cursor.node) ? Number(name) : name);
        const last = tokens[tokens.length - 1] as string;
        // An `add` into an array is always at its end: FinalPlace.append is the only one that makes it.
        if (Array.isArray(cursor.node) && op === 'add') cursor.append([value]);
        else cursor.set(Array.isArray(cursor.node) ? Number(last) : last, value);
      }
    } finally {
      this.replaying = false;
    }
    // The view now has every edit: reads and edits are allowed again.
    this.finalsFrom = undefined;
    this.merged = undefined;
  }

  /** The value of a label or annotation, entries added by this editor included. */
  entry(field: MetadataMap, key: string): string | undefined {
    return this.added[field].get(key) ?? this.pod.metadata?.[field]?.[key];
  }

  hasEntry(field: MetadataMap, key: string): boolean {
    const map = this.pod.metadata?.[field];
    return this.added[field].has(key) || (map != null && typeof map === 'object' && Object.hasOwn(map, key));
  }

  /** Adds or overwrites one label or annotation without copying the map. */
  setEntry(field: MetadataMap, key: string, value: string): void {
    const map = this.pod.metadata?.[field];
    if (map == null || typeof map !== 'object') this.set(['metadata', field], {});
    const pointer = this.pointers.of(['metadata', field, key]);
    this.recordOperation(this.hasEntry(field, key) ? 'replace' : 'add', pointer, value);
    this.added[field].set(key, value);
  }
}

/*
 * The pieces the editor is made of: cursors over the objects it owns, and places for final edits. Each records
 * the RFC 6902 operation of every write it makes.
 */

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
    private readonly pointers: JsonPointers,
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
    const pointer = this.pointers.child(this.pointer, key);
    let copy: Node;
    if (current !== null && typeof current === 'object') {
      copy = shallowCopy(current);
    } else {
      this.record(Object.hasOwn(this.node, key) ? 'replace' : 'add', pointer, kind === 'array' ? [] : {});
      copy = (kind === 'array' ? [] : {}) as Node;
    }
    this.node[key] = copy;
    const cursor = new EditCursor(this.record, this.pointers, key, copy, pointer);
    this.remember(cursor, known);
    return cursor;
  }

  /** Sets `key` to `value`, which from then on is the caller's and only ever copied, never written into. */
  set(key: Segment, value: unknown): void {
    this.record(Object.hasOwn(this.node, key) ? 'replace' : 'add', this.pointers.child(this.pointer, key), value);
    this.node[key] = value;
  }

  /** Appends to this cursor's array. */
  append(values: readonly unknown[]): void {
    const list = this.node as unknown as unknown[];
    for (const value of values) {
      this.record('add', this.pointers.child(this.pointer, list.length), value);
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

/** A shallow copy of an object or array of the pod, for an edit to write into. */
function shallowCopy(value: object): Node {
  return (Array.isArray(value) ? value.slice() : Object.assign({}, value)) as Node;
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
    private readonly pointers: JsonPointers,
  ) {}

  /** Sets the value at `below`, a path under this place whose parents exist. */
  set(below: RelativePath, value: unknown): void {
    const { segments } = below;
    let parent = this.node;
    for (let i = 0; i < segments.length - 1; i++) parent = parent[segments[i] as Segment] as Node;
    const key = segments[segments.length - 1] as Segment;
    this.record(
      Object.hasOwn(parent, key) ? 'replace' : 'add',
      this.pointers.under(this.pointer, below.pointer),
      value,
    );
  }

  /**
   * Replaces the value at `below`, which the caller has just read in the view: it exists, so there is nothing to
   * look up again (a probe's command is two lookups down, on objects of many shapes).
   */
  replace(below: RelativePath, value: unknown): void {
    this.record('replace', this.pointers.under(this.pointer, below.pointer), value);
  }

  /** Appends to the array at `key` of this place, created when missing. */
  append(key: Segment, values: readonly unknown[]): void {
    if (values.length === 0) return;
    const pointer = this.pointers.child(this.pointer, key);
    const current = this.node[key];
    let length = 0;
    if (Array.isArray(current)) length = current.length;
    else this.record(Object.hasOwn(this.node, key) ? 'replace' : 'add', pointer, []);
    for (const value of values) this.record('add', this.pointers.child(pointer, length++), value);
  }
}
