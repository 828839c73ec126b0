/**
 * The pod's labels and annotations measured in the review's JSON text, for bodies large enough to carry huge maps.
 *
 * Once a body is parsed, the only way to read a map is to enumerate it, and V8 collects every key of a large
 * object before it hands out the first, so reading a map costs in proportion to its whole size even where the
 * answer is known after its first 256 KiB. The text has the same facts in order, so one pass over it finds the
 * size past kube-apiserver's limit and the first value that is not a string without building anything; the
 * figure is `npm run bench`'s 30,000-annotation review, beyond its parse. The pass follows JSON's structure
 * (strings, escapes, nesting) without recursion, since it runs only on text JSON.parse has accepted, which may
 * nest 100,000 deep.
 *
 * It reads the last occurrence of each object on the path, as JSON.parse does. Duplicate keys inside a map
 * count twice, where JSON.parse keeps one; kube-apiserver re-encodes the pod before sending it, so only a
 * hand-made review has them, and it may be measured larger than it is.
 */
import type { MetadataMap } from '../kube-shapes/kubernetes.js';

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
  /** In an object: the opening quote of the key whose value comes next; -1 while a key is expected. */
  keyAt: number;
  /** The UTF-8 bytes of that key, in a map. */
  keyBytes: number;
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09 || code === 0xfeff;
}

/**
 * The index of the quote that closes the string whose opening quote is at `start`, read a character at a time:
 * most strings of a pod are a few characters long, where this loop costs less than a call to indexOf (the
 * 30,000-annotation review, beyond its parse).
 */
function stringEnd(text: string, start: number): number {
  const length = text.length;
  for (let i = start + 1; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) return i;
    // An escape is two characters or more; the second may be a quote.
    if (code === BACKSLASH) i++;
  }
  throw new SyntaxError('unterminated string');
}

/** The string token from its opening quote at `start`, decoded. */
function stringValue(text: string, start: number): string {
  const end = stringEnd(text, start);
  const raw = text.slice(start + 1, end);
  return raw.includes('\\') ? (JSON.parse(text.slice(start, end + 1)) as string) : raw;
}

/**
 * The UTF-8 bytes of the string token between the quotes at `start` and `end`, as Buffer.byteLength counts its
 * decoded value, counted in place: a map of tens of thousands of short strings costs no string of its own, nor a
 * call out of compiled code per string (the 30,000-annotation review, beyond its parse). A token with an escape
 * is decoded first.
 */
function tokenBytes(text: string, start: number, end: number): number {
  let bytes = 0;
  for (let i = start + 1; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) {
      if (code === BACKSLASH) return Buffer.byteLength(stringValue(text, start));
      bytes += 1;
    } else if (code < 0x800) {
      bytes += 2;
    } else if (code >= 0xd800 && code < 0xdc00 && i + 1 < end && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair is one character of four bytes; a lone surrogate is encoded as U+FFFD, three.
      bytes += 4;
      i++;
    } else {
      bytes += 3;
    }
  }
  return bytes;
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
      const keyAt = top.keyAt;
      top.keyAt = -1;
      if (top.level === MAP) {
        if (top.facts !== undefined && top.facts.nonString === undefined) {
          const key = stringValue(text, keyAt);
          top.facts.nonString = { key, bytesBefore: top.facts.bytes - top.keyBytes };
        }
      } else if (top.level >= 0 && top.level <= PATH.length) {
        const key = stringValue(text, keyAt);
        if (top.level < PATH.length && key === PATH[top.level]) {
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
    }
    return { object: kind === 'object', level, ...(facts === undefined ? {} : { facts }), keyAt: -1, keyBytes: 0 };
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
    if (top?.object === true && top.keyAt < 0) {
      if (code !== QUOTE) throw new SyntaxError('key expected');
      if (top.facts !== undefined) {
        i = mapMembers(text, i, top, top.facts, top.facts === result.annotations ? annotationsLimit : Infinity);
        // Past the limit with every value a string so far, the answer is known: the rest is not read.
        if (i < 0) return result;
        continue;
      }
      top.keyAt = i;
      i = stringEnd(text, i) + 1;
      continue;
    }
    if (code === QUOTE) {
      valueStarts(top, 'scalar');
      i = stringEnd(text, i) + 1;
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

/**
 * A map's members from the key at `start` on while their values are strings, without the general loop's dispatch
 * per token: tens of thousands of short members are most of such a body (the 30,000-annotation review, beyond
 * its parse). Stops at the map's closing brace or at a value that is not a string (its key in `frame`), both
 * left to the general loop; -1 once the bytes pass `limit`.
 */
function mapMembers(text: string, start: number, frame: Frame, facts: MapFacts, limit: number): number {
  let i = start;
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) return i;
    const keyEnd = stringEnd(text, i);
    frame.keyAt = i;
    frame.keyBytes = tokenBytes(text, i, keyEnd);
    facts.bytes += frame.keyBytes;
    i = punctuationEnd(text, keyEnd + 1);
    if (text.charCodeAt(i) !== QUOTE) return i;
    const end = stringEnd(text, i);
    facts.bytes += tokenBytes(text, i, end);
    frame.keyAt = -1;
    if (facts.nonString === undefined && facts.bytes > limit) return -1;
    i = punctuationEnd(text, end + 1);
  }
}

/** Past the blanks, commas and colons from `i`: in text JSON.parse accepted, they sit where they must. */
function punctuationEnd(text: string, start: number): number {
  let i = start;
  for (;;) {
    const code = text.charCodeAt(i);
    if (!(isSpace(code) || code === COMMA || code === COLON)) return i;
    i++;
  }
}
