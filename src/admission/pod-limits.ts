/**
 * Limits kube-apiserver enforces on every pod it stores. A mutating webhook sees the pod before that validation,
 * so a pod past them is refused here first, before any work scales with it: it could never be created anyway,
 * and checking costs a fraction of what injecting into it would.
 *
 * The pod's labels and annotations are the only parts of a legal pod that can hold tens of thousands of entries,
 * so each is walked here exactly once, for its size and for the type of its values; the pod schema leaves
 * their values to this walk (src/admission/schema.ts) and the injection never copies them
 * (src/injection/editor.ts). Beyond this walk, a review's cost does not grow with their size. For a large body
 * the walk is replaced by facts one pass over its text found (mapsOfLargeBody, scannedOverLimits), since even
 * one enumeration of a parsed map of 200,000 keys holds the event loop for tens of milliseconds.
 */

import { scanPodMaps, utf8Bytes, type MapFacts, type PodMapField, type PodMapScan } from './pod-map-scan.js';

/** apimachinery's TotalAnnotationSizeLimitB: the keys and values of all annotations, in bytes. */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

export type PodProblem = { kind: 'too-large' | 'malformed'; message: string };

/** Why the pod cannot be created, or undefined. Reads only plain shapes: the pod schema has not run yet. */
export function podOverLimits(pod: unknown): PodProblem | undefined {
  const metadata = (pod as { metadata?: { labels?: unknown; annotations?: unknown } } | null)?.metadata;
  if (metadata === null || typeof metadata !== 'object') return undefined;
  return mapProblem(metadata.annotations, 'annotations', MAX_ANNOTATIONS_BYTES) ?? mapProblem(metadata.labels, 'labels');
}

/** One walk of a string map: its first value that is not a string, or its total bytes past `maxBytes`. */
function mapProblem(map: unknown, field: PodMapField, maxBytes = Infinity): PodProblem | undefined {
  // Not an object (or an array): the pod schema refuses it with its own message.
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return undefined;
  const entries = map as Record<string, unknown>;
  let total = 0;
  // for...in stops early; Object.entries would first build an array of every entry of a huge map.
  for (const key in entries) {
    const value = entries[key];
    if (typeof value !== 'string') return notString(field, key);
    total += utf8Bytes(key) + utf8Bytes(value);
    if (total > maxBytes) return tooLarge(field, maxBytes);
  }
  return undefined;
}

/**
 * Bodies larger than this get their labels and annotations measured in the text. A smaller body holds maps of at
 * most a few tens of thousands of keys, which the walk reads in a few milliseconds.
 */
const SCAN_BODIES_FROM = 256 * 1024;

/** For a large body, its pod's maps as one pass over its text finds them (see scannedOverLimits); else undefined. */
export function mapsOfLargeBody(text: string): PodMapScan | undefined {
  return text.length > SCAN_BODIES_FROM ? scanPodMaps(text, MAX_ANNOTATIONS_BYTES) : undefined;
}

/**
 * The same answer as podOverLimits, from what one pass over the review's text found (src/admission/pod-map-scan.ts),
 * so that a huge map is never enumerated. The members are taken in the text's order, where the walk takes
 * JavaScript's (integer-like keys first): with several values that are not strings, the two may name different ones.
 */
export function scannedOverLimits(scan: PodMapScan): PodProblem | undefined {
  return factsProblem(scan.annotations, 'annotations', MAX_ANNOTATIONS_BYTES) ?? factsProblem(scan.labels, 'labels');
}

function factsProblem(facts: MapFacts | undefined, field: PodMapField, maxBytes = Infinity): PodProblem | undefined {
  if (facts === undefined) return undefined;
  // The walk stops at the first value that is not a string, unless the members before it already passed the limit.
  if (facts.nonString !== undefined) {
    return facts.nonString.bytesBefore > maxBytes ? tooLarge(field, maxBytes) : notString(field, facts.nonString.key);
  }
  return facts.bytes > maxBytes ? tooLarge(field, maxBytes) : undefined;
}

function notString(field: PodMapField, key: string): PodProblem {
  return { kind: 'malformed', message: `field object.metadata.${field}.${key} must be string` };
}

function tooLarge(field: PodMapField, maxBytes: number): PodProblem {
  return { kind: 'too-large', message: `metadata.${field} exceed ${maxBytes} bytes, the most kube-apiserver accepts` };
}
