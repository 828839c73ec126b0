/**
 * A copy of an object with only the fields named by a list of paths: what a cache keeps of each object it
 * stores. A path is the keys from the object's root, written as an array so that keys with dots (labels,
 * annotations) need no escaping; EACH in a path stands for every element of an array. A value at the end of a
 * path is kept whole. Fields absent from the object stay absent, and an object left empty is dropped.
 */
export type FieldPath = readonly string[];

/** In a FieldPath, every element of the array at that point. */
export const EACH = '[]';

type FieldTree = Map<string, FieldTree | 'whole'>;

/** A keeper for `paths`, compiled once: the returned function copies what they name out of an object. */
export function fieldKeeper<T>(paths: readonly FieldPath[]): (object: T) => T {
  const tree = compile(paths);
  return (object) => (keep(object, tree) ?? {}) as T;
}

function compile(paths: readonly FieldPath[]): FieldTree {
  const root: FieldTree = new Map();
  for (const path of paths) {
    let node = root;
    path.forEach((key, index) => {
      const last = index === path.length - 1;
      const child = node.get(key);
      if (last || child === 'whole') {
        node.set(key, 'whole');
        return;
      }
      const next: FieldTree = child ?? new Map<string, FieldTree | 'whole'>();
      node.set(key, next);
      node = next;
    });
  }
  return root;
}

function keep(value: unknown, tree: FieldTree): unknown {
  if (Array.isArray(value)) {
    const each = tree.get(EACH);
    if (each === undefined) return undefined;
    return each === 'whole' ? [...(value as unknown[])] : (value as unknown[]).map((item) => keep(item, each) ?? {});
  }
  if (value === null || typeof value !== 'object') return undefined;
  const source = value as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  let any = false;
  for (const [key, child] of tree) {
    if (!Object.hasOwn(source, key) || source[key] === undefined) continue;
    const field = child === 'whole' ? source[key] : keep(source[key], child);
    if (field === undefined) continue;
    kept[key] = field;
    any = true;
  }
  return any ? kept : undefined;
}
