import type { EditOperation } from '../injection/index.js';

/**
 * The patch as kube-apiserver wants it: base64 of the JSON text of the operations, the text being exactly what
 * `JSON.stringify(operations)` gives. The operations were recorded by the injection as it edited
 * (src/injection/editor.ts). Their values are mostly the injection config's frozen fragments (sidecars, env,
 * mounts, volumes), whose text is made once per config version (`jsonOf`), and the arrays built from the
 * pod's own commands; the text is encoded to UTF-8 once and to base64 once.
 */
export function encodePatch(operations: readonly EditOperation[]): string {
  return Buffer.from(patchText(operations)).toString('base64');
}

export function patchText(operations: readonly EditOperation[]): string {
  let text = '[';
  for (let i = 0; i < operations.length; i++) {
    const { op, path, value } = operations[i] as EditOperation;
    text += `${i > 0 ? ',' : ''}{"op":"${op}","path":${JSON.stringify(path)},"value":${jsonOf(value)}}`;
  }
  return `${text}]`;
}

/**
 * JSON text of frozen values, made once per value. Frozen values are the injection config's fragments
 * (src/sources/deep-freeze.ts), shared by every admission of one config version and dropped with it; a frozen
 * value never changes, so its text never goes stale.
 */
const frozenText = new WeakMap<object, string>();

/**
 * `JSON.stringify(value)`, reusing the ready text of frozen values. Values here are JSON, so none is undefined.
 * Most values made per admission are arrays of the pod's own strings (a wrapped command, its args), and most
 * such strings need no escaping: those are quoted as they are, which is faster than JSON.stringify here.
 */
function jsonOf(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (!Object.isFrozen(value)) return Array.isArray(value) ? stringArrayJson(value) : JSON.stringify(value);
  let text = frozenText.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    frozenText.set(value, text);
  }
  return text;
}

/**
 * What JSON.stringify would escape in a string: a quote, a backslash, or a character outside the space to
 * U+D7FF and U+E000 to U+FFFF, that is a control character or a surrogate (a lone one is escaped).
 */
const NEEDS_ESCAPING = /["\\]|[^ -\ud7ff\ue000-\uffff]/;

function stringArrayJson(values: readonly unknown[]): string {
  let text = '[';
  for (let i = 0; i < values.length; i++) {
    const item = values[i];
    if (typeof item !== 'string' || NEEDS_ESCAPING.test(item)) return JSON.stringify(values);
    text += i > 0 ? `,"${item}"` : `"${item}"`;
  }
  return `${text}]`;
}
