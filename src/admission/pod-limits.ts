/**
 * Limits kube-apiserver enforces on every pod it stores. A mutating webhook sees the pod before that validation,
 * so a pod past them is refused here first, before any work scales with it: it could never be created anyway,
 * and checking costs a fraction of what injecting into it would.
 */

/** apimachinery's TotalAnnotationSizeLimitB: the keys and values of all annotations, in bytes. */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

/** Why the pod cannot be created, or undefined. Reads only plain shapes: the pod schema has not run yet. */
export function podOverLimits(pod: unknown): string | undefined {
  const annotations = (pod as { metadata?: { annotations?: unknown } } | null)?.metadata?.annotations;
  if (annotations === null || typeof annotations !== 'object') return undefined;
  const entries = annotations as Record<string, unknown>;
  let total = 0;
  // for...in stops early; Object.entries would first build an array of every entry of a huge map.
  for (const key in entries) {
    const value = entries[key];
    total += Buffer.byteLength(key) + (typeof value === 'string' ? Buffer.byteLength(value) : 0);
    if (total > MAX_ANNOTATIONS_BYTES) {
      return `metadata.annotations exceed ${MAX_ANNOTATIONS_BYTES} bytes, the most kube-apiserver accepts`;
    }
  }
  return undefined;
}
