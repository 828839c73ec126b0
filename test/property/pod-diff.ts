import type { Pod } from '../../src/injection/index.js';
import { escapePointer } from '../../src/json/json-pointer.js';

export type PatchOperation =
  | { op: 'add'; path: string; value: unknown }
  | { op: 'replace'; path: string; value: unknown }
  | { op: 'remove'; path: string };

/**
 * The oracle for the patch the injection records as it edits (src/injection/editor.ts): RFC 6902 operations
 * that turn `original` into `mutated`, found by comparing the two. Before the editor recorded its operations,
 * this diff was the webhook's patch; it stays as an independent second way to the same pod.
 *
 * The injection is copy-on-write, so every subtree it did not touch is the very same object in both pods and is
 * skipped by identity: the cost follows what changed, not the pod's size. Appends to an array become `add`s at
 * the new indexes (objects already there stay untouched); any other change to an array of plain values, such as
 * a wrapped `command`, becomes one `replace` of that array rather than one operation per element.
 */
export function diffPods(original: Pod, mutated: Pod): PatchOperation[] {
  const operations: PatchOperation[] = [];
  diffValue(original, mutated, '', operations);
  return operations;
}

function diffValue(before: unknown, after: unknown, path: string, out: PatchOperation[]): void {
  if (before === after) return;
  if (isPlainObject(before) && isPlainObject(after)) {
    diffObject(before, after, path, out);
  } else if (Array.isArray(before) && Array.isArray(after)) {
    diffArray(before, after, path, out);
  } else {
    out.push({ op: 'replace', path, value: after });
  }
}

function diffObject(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
  out: PatchOperation[],
): void {
  for (const key of Object.keys(before)) {
    const child = `${path}/${escapePointer(key)}`;
    if (!Object.hasOwn(after, key)) out.push({ op: 'remove', path: child });
    else diffValue(before[key], after[key], child, out);
  }
  for (const key of Object.keys(after)) {
    if (!Object.hasOwn(before, key)) out.push({ op: 'add', path: `${path}/${escapePointer(key)}`, value: after[key] });
  }
}

function diffArray(before: readonly unknown[], after: readonly unknown[], path: string, out: PatchOperation[]): void {
  if (after.length < before.length || !elementwise(before, after)) {
    out.push({ op: 'replace', path, value: after });
    return;
  }
  for (let i = 0; i < before.length; i++) diffValue(before[i], after[i], `${path}/${i}`, out);
  for (let i = before.length; i < after.length; i++) out.push({ op: 'add', path: `${path}/${i}`, value: after[i] });
}

/** Whether each changed element pairs an object with an object, so per-element operations stay meaningful. */
function elementwise(before: readonly unknown[], after: readonly unknown[]): boolean {
  for (let i = 0; i < before.length; i++) {
    const a = before[i];
    const b = after[i];
    if (a === b) continue;
    if (!(isPlainObject(a) && isPlainObject(b))) return false;
  }
  return true;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
