import { escapePointer } from '../util/json-pointer.js';
import type { Pod } from './types.js';

/** One step of a path into the pod: an object key or an array index. */
export type Segment = string | number;

/**
 * One edit, as the RFC 6902 operation that makes it. Applied in order to the original pod, the editor's
 * operations give the edited pod. A value is never changed after it is recorded: an edit below it copies it first.
 */
export type EditOperation = { op: 'add' | 'replace'; path: string; value: unknown };

/** One level of a walk into the pod: the key that led there, the owned object, its pointer. */
interface Level {
  key: Segment;
  node: Record<Segment, unknown>;
  pointer: string;
}

/** The pod's string maps, which only ever get entries added. */
export type MetadataMap = 'labels' | 'annotations';

/**
 * Copy-on-write editing of a pod that records each edit as it makes it.
 *
 * Every object on the path to a change is shallow-copied once; everything else stays shared with the original,
 * which is never modified (nor is the cached injection config). Each write records the one operation that makes
 * it, so the patch is known when the edit ends, with no second walk comparing the two pods.
 *
 * Labels and annotations are the exception to copying: a pod may carry tens of thousands of annotations, and
 * the injection only ever adds one or two entries. Those entries are kept aside (read them through `entry`) and
 * merged into a copy of the map only when someone asks for the whole edited pod, which the webhook never does:
 * it needs only the operations.
 */
export class PodEditor {
  private readonly owned = new Set<object>();
  private view: Pod;
  private readonly recorded: EditOperation[] = [];
  private readonly added: Record<MetadataMap, Map<string, string>> = { labels: new Map(), annotations: new Map() };
  private merged: Pod | undefined;
  /** The levels of the last path ownPath walked, the pod itself first. */
  private readonly walked: Level[] = [];

  constructor(readonly original: Pod) {
    this.view = original;
  }

  /**
   * The pod as edited so far, but for entries added to labels and annotations: read those through `entry`.
   * Read-only: every write goes through `set`, `append` or `setEntry`.
   */
  get pod(): Pod {
    return this.view;
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
    if (this.added.labels.size === 0 && this.added.annotations.size === 0) return this.view;
    if (this.merged === undefined) {
      const metadata = { ...this.view.metadata };
      for (const field of ['labels', 'annotations'] as const) {
        if (this.added[field].size === 0) continue;
        const map: Record<string, string> = { ...metadata[field] };
        for (const [key, value] of this.added[field]) map[key] = value;
        metadata[field] = map;
      }
      this.merged = { ...this.view, metadata };
    }
    return this.merged;
  }

  /** Sets the value at `path`; its parents are created when missing. */
  set(path: readonly Segment[], value: unknown): void {
    const depth = path.length - 1;
    const parent = this.ownPath(path, depth, 'object');
    const key = path[depth] as Segment;
    this.record(Object.hasOwn(parent, key) ? 'replace' : 'add', this.pointerBelow(key), value);
    // The value may replace an object on the remembered path (see ownPath): forget all but the pod itself.
    if (value !== null && typeof value === 'object') this.walked.length = Math.min(this.walked.length, 1);
    this.merged = undefined;
    parent[key] = value;
  }

  /** Appends to the array at `path`, which is created when missing. */
  append(path: readonly Segment[], values: readonly unknown[]): void {
    if (values.length === 0) return;
    const list = this.ownPath(path, path.length, 'array') as unknown as unknown[];
    for (const value of values) {
      this.record('add', this.pointerBelow(list.length), value);
      list.push(value);
    }
    this.merged = undefined;
  }

  /** The value of a label or annotation, entries added by this editor included. */
  entry(field: MetadataMap, key: string): string | undefined {
    return this.added[field].get(key) ?? this.view.metadata?.[field]?.[key];
  }

  hasEntry(field: MetadataMap, key: string): boolean {
    const map = this.view.metadata?.[field];
    return this.added[field].has(key) || (map != null && typeof map === 'object' && Object.hasOwn(map, key));
  }

  /** Adds or overwrites one label or annotation without copying the map. */
  setEntry(field: MetadataMap, key: string, value: string): void {
    const map = this.view.metadata?.[field];
    if (map == null || typeof map !== 'object') this.set(['metadata', field], {});
    this.record(this.hasEntry(field, key) ? 'replace' : 'add', `/metadata/${field}/${token(key)}`, value);
    this.added[field].set(key, value);
    this.merged = undefined;
  }

  /**
   * The object at `path.slice(0, depth)`, made safe to write: each level copied if still shared, created (and
   * the creation recorded) when missing. A created level is an array only when it is the last and `last` says so.
   * The levels of the last path walked are remembered, and a walk starts below the part it shares with it: the
   * edits of one container (its command, args, probes, mounts) come in a row.
   */
  private ownPath(path: readonly Segment[], depth: number, last: 'object' | 'array'): Record<Segment, unknown> {
    if (!this.owned.has(this.view)) this.view = this.copy(this.view);
    const walked = this.walked;
    if (walked.length === 0 || walked[0]?.node !== this.view) {
      walked.length = 0;
      walked.push({ key: '', node: this.view, pointer: '' });
    }
    let shared = 1;
    while (shared < walked.length && shared <= depth && walked[shared]?.key === path[shared - 1]) shared++;
    walked.length = shared;
    let { node, pointer } = walked[shared - 1] as Level;
    for (let i = shared - 1; i < depth; i++) {
      const key = path[i] as Segment;
      const child = node[key];
      const below = `${pointer}/${token(key)}`;
      let next: Record<Segment, unknown>;
      if (child !== null && typeof child === 'object') {
        next = (this.owned.has(child) ? child : this.copy(child)) as Record<Segment, unknown>;
      } else {
        const array = i === depth - 1 && last === 'array';
        this.record(Object.hasOwn(node, key) ? 'replace' : 'add', below, array ? [] : {});
        next = this.mark((array ? [] : {}) as Record<Segment, unknown>);
      }
      node[key] = next;
      node = next;
      pointer = below;
      walked.push({ key, node, pointer });
    }
    return node;
  }

  /** The pointer to `key` under the object ownPath returned last. */
  private pointerBelow(key: Segment): string {
    return `${this.walked[this.walked.length - 1]?.pointer ?? ''}/${token(key)}`;
  }

  private record(op: EditOperation['op'], path: string, value: unknown): void {
    this.recorded.push({ op, path, value });
  }

  private copy<T extends object>(value: T): T {
    // Object.assign rather than a spread: V8 gives a spread clone a map of its own, outside the transition tree,
    // so each property the edit then adds made a new map (several times slower, and garbage kept until a full GC).
    return this.mark((Array.isArray(value) ? value.slice() : Object.assign({}, value)) as T);
  }

  private mark<T extends object>(value: T): T {
    this.owned.add(value);
    return value;
  }
}

/** One JSON pointer token (RFC 6901). */
function token(segment: Segment): string {
  return typeof segment === 'number' ? String(segment) : escapePointer(segment);
}
