/**
 * The pod's labels and annotations measured in the review's JSON text, for bodies large enough to carry huge maps.
 *
 * Once a body is parsed, the only way to read a map is to enumerate it, and V8 collects every key of a large
 * object before the first one is handed out: for a pod of 232,581 annotations that is 45 to 100 ms, whatever
 * the walk does with them, where its JSON.parse took 127 ms. The text has the same facts in order, so one pass
 * over it finds the size past kube-apiserver's limit and the first value that is not a string without building
 * anything. The pass follows JSON's structure (strings, escapes, nesting) without recursion, since it runs only
 * on text JSON.parse has accepted, which may nest 100,000 deep.
 *
 * It reads the last occurrence of each object on the path, as JSON.parse does. Duplicate keys inside a map
 * count twice, where JSON.parse keeps one; kube-apiserver re-encodes the pod before sending it, so only a
 * hand-made review has them, and it may be measured larger than it is.
 */
import type { MetadataMap } from '../shapes/kubernetes.js';

/** What one pass over a map finds, in the order the text gives its members. */
export interface MapFacts {
  /** UTF-8 bytes of every key and string value. */
  bytes: number;
  /** The first key whose value is not a string, and the bytes of the members before it. */
  nonString?: { key: string; bytesBefore: number };
}

/** The facts of each map the pod has as an object at request.object.metadata. */
export type PodMapScan = Partial<Record<MetadataMap, MapFacts>>;

const PATH = ['request', 'object', 'metadata'] as const;
/** Frame levels: off the path, 0 to 3 path elements matched (3: the metadata object), a map. */
const OFF = -1;
const MAP = PATH.length + 1;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** One open object or array. */
interface Frame {
  object: boolean;
  level: number;
  /** The map's facts, when this frame is a map. */
  facts?: MapFacts;
  /** In an object: the key of the member whose value comes next; undefined while a key is expected. */
  key?: string;
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09 || code === 0xfeff;
}

/** The index of the quote that closes the string whose opening quote is at `start`. */
function stringEnd(text: string, start: number): number {
  let from = start + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) throw new SyntaxError('unterminated string');
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}

/** The string token from its opening quote at `start` to its closing one at `end`, decoded. */
function stringValue(text: string, start: number, end: number): string {
  const raw = text.slice(start + 1, end);
  return raw.includes('\\') ? (JSON.parse(text.slice(start, end + 1)) as string) : raw;
}

// Any character outside ASCII: only such strings need Buffer.byteLength; for the rest, length is the byte count.
const NON_ASCII = /[\u0080-\uffff]/;

export function utf8Bytes(value: string): number {
  return NON_ASCII.test(value) ? Buffer.byteLength(value) : value.length;
}

/**
 * Reads `text`, a JSON document JSON.parse accepted, for the maps at request.object.metadata. Undefined when the
 * text does not read as JSON after all: the caller then walks the parsed maps instead. Once the annotations pass
 * `annotationsLimit` (every value a string so far), it stops there, so a huge map costs no more than its first
 * `annotationsLimit` bytes; a later duplicate of the map, which JSON.parse would keep instead, is not read
 * (kube-apiserver sends none).
 */
export function scanPodMaps(text: string, annotationsLimit = Infinity): PodMapScan | undefined {
  try {
    return scan(text, annotationsLimit);
  } catch {
    return undefined;
  }
}

function scan(text: string, annotationsLimit: number): PodMapScan {
  const result: PodMapScan = {};
  const stack: Frame[] = [];

  /** A value other than a string member of a map starts under `top`: the frame it opens, if a container. */
  const valueStarts = (top: Frame | undefined, kind: 'object' | 'array' | 'scalar'): Frame => {
    let level = OFF;
    let facts: MapFacts | undefined;
    if (top === undefined) {
      if (kind === 'object') level = 0;
    } else if (top.object) {
      const key = top.key ?? '';
      top.key = undefined;
      if (top.level === MAP) {
        if (top.facts !== undefined && top.facts.nonString === undefined) {
          top.facts.nonString = { key, bytesBefore: top.facts.bytes - utf8Bytes(key) };
        }
      } else if (top.level >= 0 && top.level < PATH.length && key === PATH[top.level]) {
        // A later occurrence of an object on the path replaces an earlier one, as in JSON.parse.
        delete result.labels;
        delete result.annotations;
        if (kind === 'object') level = top.level + 1;
      } else if (top.level === PATH.length && (key === 'labels' || key === 'annotations')) {
        delete result[key];
        if (kind === 'object') {
          facts = { bytes: 0 };
          result[key] = facts;
          level = MAP;
        }
      }
    }
    return { object: kind === 'object', level, ...(facts === undefined ? {} : { facts }) };
  };

  const length = text.length;
  let i = 0;
  while (i < length) {
    const code = text.charCodeAt(i);
    if (isSpace(code) || code === COMMA || code === COLON) {
      i++;
      continue;
    }
    if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      if (stack.pop() === undefined) throw new SyntaxError('unbalanced');
      i++;
      continue;
    }
    const top = stack[stack.length - 1];
    if (top?.object === true && top.key === undefined) {
      if (code !== QUOTE) throw new SyntaxError('key expected');
      const end = stringEnd(text, i);
      // Keys are decoded only where they matter: on the path and in the maps.
      top.key = top.level === OFF ? '' : stringValue(text, i, end);
      if (top.facts !== undefined) top.facts.bytes += utf8Bytes(top.key);
      i = end + 1;
      continue;
    }
    if (code === QUOTE) {
      const end = stringEnd(text, i);
      if (top?.facts !== undefined) {
        const facts = top.facts;
        facts.bytes += utf8Bytes(stringValue(text, i, end));
        top.key = undefined;
        // Past the limit with every value a string so far, the answer is known: the rest is not read.
        if (facts === result.annotations && facts.nonString === undefined && facts.bytes > annotationsLimit)
          return result;
      } else {
        valueStarts(top, 'scalar');
      }
      i = end + 1;
      continue;
    }
    if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      stack.push(valueStarts(top, code === OPEN_OBJECT ? 'object' : 'array'));
      i++;
      continue;
    }
    // A number, true, false or null: up to the next delimiter.
    valueStarts(top, 'scalar');
    i++;
    while (i < length) {
      const next = text.charCodeAt(i);
      if (next === COMMA || next === CLOSE_OBJECT || next === CLOSE_ARRAY || isSpace(next)) break;
      i++;
    }
  }
  if (stack.length > 0) throw new SyntaxError('unbalanced');
  return result;
}
