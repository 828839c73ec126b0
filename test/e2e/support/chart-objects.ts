// Comparing what the chart renders with what kustomize renders: objects are keyed by kind, namespace and name,
// and the only thing set aside is what Helm adds to every chart (its standard labels) and its hooks.
import type { KubeObject } from './helm.js';

/** The labels Helm's own chart conventions add; everything else must match manifests/ exactly. */
export const HELM_STANDARD_LABELS = [
  'helm.sh/chart',
  'app.kubernetes.io/managed-by',
  'app.kubernetes.io/instance',
  'app.kubernetes.io/version',
] as const;

export const objectKey = (o: KubeObject): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export const isHook = (o: KubeObject): boolean => o.metadata.annotations?.['helm.sh/hook'] !== undefined;

/**
 * A copy without Helm's standard labels: off metadata.labels (an emptied map dropped), and off every other label
 * map or selector (the chart selects on app.kubernetes.io/instance as well; manifests/ has no release).
 */
export function withoutHelmLabels(object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  dropHelmLabels(copy);
  if (copy.metadata.labels !== undefined && Object.keys(copy.metadata.labels).length === 0) delete copy.metadata.labels;
  return copy;
}

function dropHelmLabels(value: unknown): void {
  if (Array.isArray(value)) {
    for (const item of value) dropHelmLabels(item);
  } else if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    for (const label of HELM_STANDARD_LABELS) delete record[label];
    for (const child of Object.values(record)) dropHelmLabels(child);
  }
}

/** The objects by key; a key seen twice is an error (two objects kubectl would apply over each other). */
export function byKey(objects: readonly KubeObject[]): Map<string, KubeObject> {
  const map = new Map<string, KubeObject>();
  for (const o of objects) {
    if (map.has(objectKey(o))) throw new Error(`${objectKey(o)} rendered twice`);
    map.set(objectKey(o), o);
  }
  return map;
}

/** Release objects (not hooks) of a helm render, Helm's labels removed, by key. */
export const releaseObjects = (rendered: readonly KubeObject[]): Map<string, KubeObject> =>
  byKey(rendered.filter((o) => !isHook(o)).map(withoutHelmLabels));
