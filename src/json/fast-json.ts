/**
 * JSON text made fast on V8, for the admission's answer: what keeps a patch's values on JSON.stringify's fast
 * path, and a long ASCII string put into JSON bytes without going through stringify at all. The code that gains
 * calls these by name and reads as it would without them.
 *
 * V8's fast path for JSON.stringify (Node 26; Node 20 has none) serializes plain objects, arrays of the ordinary
 * elements kinds and strings that are not ropes. A value of any other kind anywhere in the input sends the whole
 * call down the general path, which is much slower; a patch is made of the pod's values and of values shared by
 * every admission (the configs, the wrapper's strings), so these rules hold for everything that goes into one.
 */

/**
 * `parts` joined by `separator`, as one flat string. V8 keeps a concatenation (`+` or a template literal) of 13
 * characters or more as a rope, a pair of pointers to its two parts, which JSON.stringify's fast path does not
 * take, even once V8 has flattened it; a join writes its result into a string of its own. For every string made
 * at run time that goes into a patch: the wrapper's path, the operations' JSON pointers. Shown by
 * `npm run bench`, the in-process table's "injecting" column (one rope in every wrapped command moves it).
 */
export function flatJoin(parts: readonly string[], separator = ''): string {
  return parts.join(separator);
}

/**
 * Freezes every object in `value`, all the way down, and no array (though what an array holds is frozen). A
 * frozen array gets V8's frozen elements kind, which JSON.stringify's fast path does not take, and values frozen
 * here go into patches by reference. Shown by `npm run bench`, the in-process table's "injecting" column.
 */
export function deepFreezeObjects<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    for (const element of value) deepFreezeObjects(element);
  } else if (!Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreezeObjects(child);
  }
  return value;
}

/**
 * `head`, `ascii` and `tail` as one buffer of UTF-8, `ascii` and `tail` copied a byte per character: both must be
 * ASCII, as base64 is, which in a JSON string needs no escape and in UTF-8 is one byte per character. For a long
 * string known to be so (the patch, most of an answer's bytes), this is one copy where JSON.stringify would
 * scan it for characters to escape and Buffer.from scan it again to encode it; and the buffer's length is known
 * without measuring a string. Part of `npm run bench`'s in-process "injecting" column, which times the review
 * with its answer's serialization.
 */
export function spliceAscii(head: string, ascii: string, tail: string): Buffer {
  const headBytes = Buffer.byteLength(head);
  const bytes = Buffer.allocUnsafe(headBytes + ascii.length + tail.length);
  bytes.write(head, 0);
  bytes.write(ascii, headBytes, 'latin1');
  bytes.write(tail, headBytes + ascii.length, 'latin1');
  return bytes;
}
