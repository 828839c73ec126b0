/**
 * What makes an answer wrong, whatever was sent: a 200 that is not a review answer for the request's own uid,
 * a patch kube-apiserver would refuse to apply, or a body that shows the server's insides. Pure functions, run
 * on the main thread and again, for values too deep for its stack, in check-worker.ts.
 */
import { applyStrict, type PatchOperation } from '../test/support/strict-patch.js';

export type Verdict =
  { ok: true; patched: boolean; versions: string[] } | { ok: false; reason: string } | { deep: true };

const LEAKS: [RegExp, string][] = [
  [/\bat (?:async )?[\w$.<>[\] ]+ \((?:node:|file:|\/)/, 'a stack frame'],
  [/\bat (?:node:|file:\/\/|\/)[^\s"]*:\d+:\d+/, 'a stack frame'],
  [/node_modules/, 'a node_modules path'],
  [/node:internal/, 'a Node internal module'],
  [/file:\/\//, 'a file URL'],
  [/(?:^|[\s"'(])\/[\w.-]+\/[\w./-]*\.(?:[cm]?js|ts|ya?ml)\b/, 'a source or config file path'],
];

/** The package root and the harness's work directory are on no legitimate answer: a body naming them leaks a path. */
export function leakIn(text: string, places: readonly string[]): string | undefined {
  const place = places.find((path) => text.includes(path));
  if (place !== undefined) return `the path ${place}`;
  return LEAKS.find(([pattern]) => pattern.test(text))?.[1];
}

/** The review as the server reads it: UTF-8 with a leading byte order mark dropped, as secure-json-parse does. */
export function parseSent(body: Buffer | string): unknown {
  let text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return JSON.parse(text);
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Image tags of the sidecars the config-flip phase versions; one answer must never hold two. */
export function configVersions(patchText: string): string[] {
  const tags = new Set<string>();
  for (const match of patchText.matchAll(/registry\.example\.com\/(?:agent-runtime|csi-sidecar):([A-Za-z0-9._-]+)/g)) {
    if (match[1] !== undefined) tags.add(match[1]);
  }
  return [...tags].sort();
}

/** A 200 answer to POST /mutate, judged against what was sent. */
export function checkReviewAnswer(sent: Buffer | string, answerBody: Buffer | string): Verdict {
  try {
    return judge(sent, answerBody);
  } catch (error) {
    if (error instanceof RangeError) return { deep: true };
    throw error;
  }
}

function judge(sent: Buffer | string, answerBody: Buffer | string): Verdict {
  let answer: unknown;
  try {
    answer = JSON.parse(answerBody.toString());
  } catch {
    return { ok: false, reason: 'a 200 whose body is not JSON' };
  }
  const top = record(answer);
  const response = record(top?.response);
  if (top?.kind !== 'AdmissionReview' || top.apiVersion !== 'admission.k8s.io/v1' || response === undefined) {
    return { ok: false, reason: 'a 200 that is not an AdmissionReview answer' };
  }
  if (typeof response.allowed !== 'boolean' || typeof response.uid !== 'string') {
    return { ok: false, reason: 'a 200 without a boolean allowed and a string uid' };
  }
  let review: unknown;
  try {
    review = parseSent(sent);
  } catch (error) {
    if (error instanceof RangeError) throw error;
    return { ok: false, reason: 'a 200 for a body that is not JSON' };
  }
  const request = record(record(review)?.request);
  if (request?.uid !== response.uid) return { ok: false, reason: 'uid mismatch' };
  if (response.patch === undefined) return { ok: true, patched: false, versions: [] };

  if (response.patchType !== 'JSONPatch' || typeof response.patch !== 'string') {
    return { ok: false, reason: 'a patch without patchType JSONPatch' };
  }
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(response.patch)) return { ok: false, reason: 'a patch that is not base64' };
  const patchText = Buffer.from(response.patch, 'base64').toString('utf8');
  let operations: unknown;
  try {
    operations = JSON.parse(patchText);
  } catch {
    return { ok: false, reason: 'a patch that is not JSON' };
  }
  if (
    !Array.isArray(operations) ||
    !operations.every((op) => typeof record(op)?.op === 'string' && typeof record(op)?.path === 'string')
  ) {
    return { ok: false, reason: 'a patch that is not a list of operations' };
  }
  try {
    applyStrict(request.object, operations as PatchOperation[]);
  } catch (error) {
    if (error instanceof RangeError) throw error;
    return { ok: false, reason: `a patch that does not apply strictly: ${(error as Error).message.slice(0, 160)}` };
  }
  return { ok: true, patched: true, versions: configVersions(patchText) };
}

/** Non-200 answers should be `{message, code}`; Fastify's own default handler answers another shape. */
export function errorShape(body: Buffer): string {
  try {
    const value = record(JSON.parse(body.toString('utf8')));
    if (typeof value?.message === 'string' && typeof value.code === 'string') return '{message, code}';
    return `{${Object.keys(value ?? {})
      .sort()
      .join(', ')}}`;
  } catch {
    return body.length === 0 ? 'empty' : 'not JSON';
  }
}
