/**
 * Reading and editing a JSON value by path, for the fuzzer: every path in a value, the value at one, a copy with
 * one replaced or removed, and a key inserted as text (for the keys JSON.parse treats specially).
 */
import type { Json, JsonObject } from './reviews.js';

type Key = string | number;
export type Path = Key[];

/** A replacement that removes the path instead. */
export const DELETE = Symbol('delete');
export type Replacement = Json | typeof DELETE;

/** A string no seed holds, set where text is spliced in afterwards; quoted, as it stands in the JSON text. */
export const PLACEHOLDER = '\u0001soak\u0001';
export const QUOTED_PLACEHOLDER = JSON.stringify(PLACEHOLDER);

/** Every path in `root`, and apart the paths of its objects and of its strings. */
export function pathsOf(root: Json): { paths: Path[]; objectPaths: Path[]; stringPaths: Path[] } {
  const paths: Path[] = [];
  const objectPaths: Path[] = [];
  const stringPaths: Path[] = [];
  const walk = (node: Json, path: Path): void => {
    paths.push(path);
    if (typeof node === 'string') stringPaths.push(path);
    if (Array.isArray(node)) {
      node.forEach((child, i) => walk(child, [...path, i]));
    } else if (node !== null && typeof node === 'object') {
      objectPaths.push(path);
      for (const [key, child] of Object.entries(node)) walk(child, [...path, key]);
    }
  };
  walk(root, []);
  return { paths, objectPaths, stringPaths: stringPaths.length === 0 ? [['request', 'uid']] : stringPaths };
}

export function getAt(root: Json, path: Path): Json {
  let node: Json = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return null;
    node = (Array.isArray(node) ? node[key as number] : node[key as string]) ?? null;
  }
  return node;
}

/** The value with one path replaced (or removed); missing parents are made, so any path of any seed applies. */
export function setAt(root: JsonObject, path: Path, replacement: Replacement): Json {
  if (path.length === 0) return replacement === DELETE ? null : replacement;
  const copy = structuredClone(root);
  let node: Json = copy;
  for (const key of path.slice(0, -1)) {
    const container = node as Record<string | number, Json>;
    let child = container[key];
    if (child === null || typeof child !== 'object' || child === undefined) {
      child = {};
      container[key] = child;
    }
    node = child;
  }
  const last = path[path.length - 1] as Key;
  if (Array.isArray(node)) {
    if (replacement === DELETE) node.splice(Number(last), 1);
    else node[Number(last)] = replacement;
  } else if (node !== null && typeof node === 'object') {
    if (replacement === DELETE) delete node[String(last)];
    else
      Object.defineProperty(node, String(last), {
        value: replacement,
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return copy;
}

/** The text of `root` with `key: value` added at an object path; keys JSON.parse would treat specially go in as text. */
export function insertKey(root: JsonObject, path: Path, key: string, value: Json): string {
  const marked = setAt(root, [...path, PLACEHOLDER], value);
  return JSON.stringify(marked).replace(QUOTED_PLACEHOLDER, () => JSON.stringify(key));
}

export function splitOnce(text: string, separator: string): [string, string] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, ''] : [text.slice(0, at), text.slice(at + separator.length)];
}
