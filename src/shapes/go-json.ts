import { escapePointer } from '../util/json-pointer.js';
import type { Shape, StructShape } from './kubernetes.js';

export interface GoReading {
  /** The value as Go would hold it after decoding, in the canonical field names. */
  value: unknown;
  /** JSON pointers of the fields Go would drop because its struct has no such field. */
  unknownFields: string[];
}

/**
 * Reads an already parsed JSON value the way Go's encoding/json decodes it into the shape's structs, which is
 * how the Sandbox controller reads the same ConfigMap:
 * - `null` means absent (a null list element is the element type's zero value);
 * - a key matches a struct field case-insensitively (an exact match first), and a later duplicate wins, merging
 *   into an object it repeats, as Go decodes into the value already there;
 * - a key the struct does not have is dropped and reported;
 * - a field Go always writes (no omitempty) that is missing is its zero value, "".
 * Types are not checked here: a wrong type stays as it is, for the schema to report where Go would fail.
 */
export function readLikeGo(value: unknown, shape: Shape): GoReading {
  const unknownFields: string[] = [];
  const read = value === null ? zeroOf(shape) : readValue(value, shape, '', unknownFields);
  return { value: read, unknownFields };
}

function readValue(value: unknown, shape: Shape, path: string, unknown: string[]): unknown {
  switch (shape.type) {
    case 'string':
    case 'boolean':
      return value;
    case 'any':
      return withoutNulls(value);
    case 'list':
      if (!Array.isArray(value)) return value;
      return value.map((item: unknown, index) =>
        item === null ? zeroOf(shape.of) : readValue(item, shape.of, `${path}/${index}`, unknown),
      );
    case 'map': {
      if (!isObject(value)) return value;
      const result: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        setOwn(
          result,
          key,
          item === null ? zeroOf(shape.of) : readValue(item, shape.of, `${path}/${escapePointer(key)}`, unknown),
        );
      }
      return result;
    }
    case 'struct':
      return isObject(value) ? readStruct(value, shape, path, unknown) : value;
  }
}

function readStruct(value: Record<string, unknown>, shape: StructShape, path: string, unknown: string[]): object {
  const names = fieldNames(shape);
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const name = Object.hasOwn(shape.fields, key) ? key : names.get(fold(key));
    const field = name === undefined ? undefined : shape.fields[name];
    if (name === undefined || field === undefined) {
      unknown.push(`${path}/${escapePointer(key)}`);
      continue;
    }
    if (item === null) {
      delete result[name];
      continue;
    }
    const read = readValue(item, field, `${path}/${name}`, unknown);
    const earlier = result[name];
    const merges = (field.type === 'struct' || field.type === 'map') && isObject(earlier) && isObject(read);
    result[name] = merges ? { ...earlier, ...read } : read;
  }
  for (const name of shape.always ?? []) {
    if (result[name] === undefined && shape.fields[name]?.type === 'string') result[name] = '';
  }
  return result;
}

function zeroOf(shape: Shape): unknown {
  if (shape.type === 'string') return '';
  if (shape.type === 'boolean') return false;
  if (shape.type === 'struct') return readStruct({}, shape, '', []);
  return null;
}

/** Untyped subtrees keep their keys, but a null field is absent there too. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isObject(value)) return value;
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (item !== null) setOwn(result, key, withoutNulls(item));
  }
  return result;
}

const foldedNames = new WeakMap<StructShape, Map<string, string>>();

function fieldNames(shape: StructShape): Map<string, string> {
  let names = foldedNames.get(shape);
  if (names === undefined) {
    names = new Map(Object.keys(shape.fields).map((name) => [fold(name), name]));
    foldedNames.set(shape, names);
  }
  return names;
}

/** Go's case folding of field names; U+017F (long s) is the one fold toLowerCase does not make. */
function fold(name: string): string {
  return name.toLowerCase().replaceAll('\u017f', 's');
}

/** A plain assignment of "__proto__" would set the prototype instead of a key. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
