import { escapePointer } from '../json/json-pointer.js';
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

/**
 * Writes a value as Go's json.Marshal writes the same data, byte for byte, for a reader that may compare bytes
 * (a proxy parsing an env var the Sandbox controller would have written):
 * - a Map is a Go map: its keys sorted by their UTF-8 bytes;
 * - a plain object is a Go struct: its keys in the order they were set, which the caller makes the struct's
 *   field order, leaving out what `omitempty` leaves out (an undefined value is left out too);
 * - strings are escaped as Go escapes them (see goString);
 * - numbers are the integers Go's int32 fields hold, written in decimal.
 */
export function marshalLikeGo(value: unknown): string {
  if (typeof value === 'string') return goString(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(marshalLikeGo).join(',')}]`;
  if (value instanceof Map) {
    const keys = [...(value as Map<string, unknown>).keys()].sort(byUtf8);
    return `{${keys.map((key) => `${goString(key)}:${marshalLikeGo(value.get(key))}`).join(',')}}`;
  }
  const members: string[] = [];
  for (const [key, item] of Object.entries(value)) {
    if (item !== undefined) members.push(`${goString(key)}:${marshalLikeGo(item)}`);
  }
  return `{${members.join(',')}}`;
}

const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  0x22: '\\"',
  0x5c: '\\\\',
  0x08: '\\b',
  0x0c: '\\f',
  0x0a: '\\n',
  0x0d: '\\r',
  0x09: '\\t',
};

/**
 * A JSON string as Go's encoding/json writes it with its default HTML escaping: `<`, `>` and `&` as \u003c,
 * \u003e and \u0026, U+2028 and U+2029 escaped, control characters as \b \f \n \r \t or \u00XX (lower-case hex),
 * everything else as it is. A lone surrogate, which Go's decoder would have made U+FFFD, is U+FFFD. Runs of
 * characters that need nothing are copied whole, as Go copies them.
 */
export function goString(text: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x20 && code !== 0x22 && code !== 0x5c && code !== 0x3c && code !== 0x3e && code !== 0x26) {
      if (code < 0x2028 || (code > 0x2029 && code < 0xd800) || code > 0xdfff) continue;
      if (code >= 0xd800 && code <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1))) {
        i++;
        continue;
      }
    }
    out += text.slice(start, i) + escapeOne(code);
    start = i + 1;
  }
  return `${out}${text.slice(start)}"`;
}

/** The escape of one UTF-16 unit that goString does not copy as it is. */
function escapeOne(code: number): string {
  // Go's decoder had already made a lone surrogate U+FFFD, which its encoder writes as it is.
  if (code >= 0xd800 && code <= 0xdfff) return '\ufffd';
  return SHORT_ESCAPES[code] ?? `\\u${code.toString(16).padStart(4, '0')}`;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Go's order of map keys: by their UTF-8 bytes, which is the order of their code points. */
function byUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
