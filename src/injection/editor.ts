import type { Pod } from './types.js';

/**
 * Copy-on-write editing of a pod. Every object on the path to a change is shallow-copied once; everything
 * else stays shared with the original. That keeps the original (and the cached injection config) untouched,
 * and lets the diff skip unchanged subtrees by identity, so its cost follows what changed, not the pod's size.
 */
export class PodEditor {
  private readonly owned = new WeakSet<object>();
  private current: Pod;

  constructor(readonly original: Pod) {
    this.current = original;
  }

  /** The pod as edited so far (the original itself when nothing changed). */
  get pod(): Pod {
    return this.current;
  }

  get changed(): boolean {
    return this.current !== this.original;
  }

  /** The pod, made safe to write at its top level. */
  root(): Pod {
    if (!this.owned.has(this.current)) {
      this.current = this.copy(this.current);
    }
    return this.current;
  }

  /**
   * `parent[key]`, made safe to write: copied if still shared, created from `empty` when absent.
   * `parent` must itself have come from this editor.
   */
  own<T extends object>(parent: object, key: string | number, empty: () => T): T {
    const holder = parent as Record<string | number, unknown>;
    const value = holder[key];
    if (value !== undefined && value !== null && typeof value === 'object' && this.owned.has(value)) {
      return value as T;
    }
    const fresh =
      value !== undefined && value !== null && typeof value === 'object' ? this.copy(value as T) : this.mark(empty());
    holder[key] = fresh;
    return fresh;
  }

  private copy<T extends object>(value: T): T {
    const copied = (Array.isArray(value) ? value.slice() : { ...value }) as T;
    return this.mark(copied);
  }

  private mark<T extends object>(value: T): T {
    this.owned.add(value);
    return value;
  }
}

