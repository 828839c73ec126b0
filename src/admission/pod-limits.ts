/**
 * Limits kube-apiserver enforces on every pod it stores. A mutating webhook sees the pod before that validation,
 * so a pod past them is refused here first, before any work scales with it: it could never be created anyway,
 * and checking costs a fraction of what injecting into it would.
 *
 * The pod's labels and annotations are the only parts of a legal pod that can hold tens of thousands of entries,
 * so each is measured here exactly once, for its size and for the type of its values; the pod schema leaves
 * their values to this rule (src/admission/schema.ts) and the injection never copies them
 * (src/injection/editor.ts). Beyond this, a review's cost does not grow with their size.
 *
 * One rule, two ways to measure: a small body's maps are walked once parsed; a large body's are measured in its
 * text (src/admission/pod-map-scan.ts), since V8 enumerates a parsed map whole before the walk reads its first
 * key. Both give the same facts, and the facts give the answer.
 */

import type { MetadataMap } from '../kube-shapes/kubernetes.js';
import { scanPodMaps, type MapFacts, type PodMapScan } from './pod-map-scan.js';

/** The maps this rule checks; the pod schema leaves their values to it. */
export const POD_MAP_FIELDS: readonly MetadataMap[] = ['labels', 'annotations'];

/** apimachinery's TotalAnnotationSizeLimitB: the keys and values of all annotations, in bytes. */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

export type PodProblem = { kind: 'too-large' | 'malformed'; message: string };

/**
 * Bodies larger than this get their labels and annotations measured in the text. A smaller body holds maps of at
 * most a few tens of thousands of keys, which the walk reads in a few milliseconds.
 */
const SCAN_BODIES_FROM = 256 * 1024;

/**
 * Why the pod cannot be created, or undefined. `text` is the review's JSON text, when there is one. Reads only
 * plain shapes: the pod schema has not run yet.
 *
 * In the text the members come in its order, where the walk takes JavaScript's (integer-like keys first): with
 * several values that are not strings, a large body and a small one may name different keys.
 */
export function podOverLimits(pod: unknown, text?: string): PodProblem | undefined {
  const scanned =
    text !== undefined && text.length > SCAN_BODIES_FROM ? scanPodMaps(text, MAX_ANNOTATIONS_BYTES) : undefined;
  const facts = scanned ?? walkPodMaps(pod);
  return problemOf(facts.annotations, 'annotations', MAX_ANNOTATIONS_BYTES) ?? problemOf(facts.labels, 'labels');
}

/** The parsed maps' facts, as the pass over the text finds them (and stopping where it stops). */
function walkPodMaps(pod: unknown): PodMapScan {
  const metadata = (pod as { metadata?: { labels?: unknown; annotations?: unknown } } | null)?.metadata;
  if (metadata === null || typeof metadata !== 'object') return {};
  const annotations = walkMap(metadata.annotations, MAX_ANNOTATIONS_BYTES);
  const labels = walkMap(metadata.labels, Infinity);
  return { ...(annotations === undefined ? {} : { annotations }), ...(labels === undefined ? {} : { labels }) };
}

/** One walk of a string map, up to its first value that is not a string or until its bytes pass `maxBytes`. */
function walkMap(map: unknown, maxBytes: number): MapFacts | undefined {
  // Not an object (or an array): the pod schema refuses it with its own message.
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return undefined;
  const entries = map as Record<string, unknown>;
  let bytes = 0;
  // for...in stops early; Object.entries would first build an array of every entry of a huge map.
  for (const key in entries) {
    const value = entries[key];
    if (typeof value !== 'string') return { bytes, nonString: { key, bytesBefore: bytes } };
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
    if (bytes > maxBytes) break;
  }
  return { bytes };
}

function problemOf(facts: MapFacts | undefined, field: MetadataMap, maxBytes = Infinity): PodProblem | undefined {
  if (facts === undefined) return undefined;
  // The measure stops at the first value that is not a string, unless the members before it already passed the limit.
  if (facts.nonString !== undefined) {
    return facts.nonString.bytesBefore > maxBytes ? tooLarge(field, maxBytes) : notString(field, facts.nonString.key);
  }
  return facts.bytes > maxBytes ? tooLarge(field, maxBytes) : undefined;
}

function notString(field: MetadataMap, key: string): PodProblem {
  return { kind: 'malformed', message: `field object.metadata.${field}.${key} must be string` };
}

function tooLarge(field: MetadataMap, maxBytes: number): PodProblem {
  return { kind: 'too-large', message: `metadata.${field} exceed ${maxBytes} bytes, the most kube-apiserver accepts` };
}
