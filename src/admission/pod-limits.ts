/**
 * Limits kube-apiserver enforces on every pod it stores. A mutating webhook sees the pod before that validation,
 * so a pod past them is refused here first, before any work scales with it: it could never be created anyway,
 * and checking costs a fraction of what injecting into it would.
 *
 * The pod's labels and annotations are the only parts of a legal pod that can hold tens of thousands of entries,
 * so each is walked here exactly once, for its size and for the type of its values; the pod schema leaves
 * their values to this walk (src/admission/schema.ts) and the injection never copies them
 * (src/injection/editor.ts). Beyond this walk, a review's cost does not grow with their size.
 */

/** apimachinery's TotalAnnotationSizeLimitB: the keys and values of all annotations, in bytes. */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

export type PodProblem = { kind: 'too-large' | 'malformed'; message: string };

/** Why the pod cannot be created, or undefined. Reads only plain shapes: the pod schema has not run yet. */
export function podOverLimits(pod: unknown): PodProblem | undefined {
  const metadata = (pod as { metadata?: { labels?: unknown; annotations?: unknown } } | null)?.metadata;
  if (metadata === null || typeof metadata !== 'object') return undefined;
  return mapProblem(metadata.annotations, 'annotations', MAX_ANNOTATIONS_BYTES) ?? mapProblem(metadata.labels, 'labels');
}

// Any character outside ASCII: only such strings need Buffer.byteLength; for the rest, length is the byte count.
const NON_ASCII = /[\u0080-\uffff]/;

function utf8Bytes(text: string): number {
  return NON_ASCII.test(text) ? Buffer.byteLength(text) : text.length;
}

/** One walk of a string map: its first value that is not a string, or its total bytes past `maxBytes`. */
function mapProblem(map: unknown, field: 'labels' | 'annotations', maxBytes = Infinity): PodProblem | undefined {
  // Not an object (or an array): the pod schema refuses it with its own message.
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return undefined;
  const entries = map as Record<string, unknown>;
  let total = 0;
  // for...in stops early; Object.entries would first build an array of every entry of a huge map.
  for (const key in entries) {
    const value = entries[key];
    if (typeof value !== 'string') {
      return { kind: 'malformed', message: `field object.metadata.${field}.${key} must be string` };
    }
    total += utf8Bytes(key) + utf8Bytes(value);
    if (total > maxBytes) {
      return { kind: 'too-large', message: `metadata.${field} exceed ${maxBytes} bytes, the most kube-apiserver accepts` };
    }
  }
  return undefined;
}
