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

/** A copy without Helm's standard labels (and without an emptied labels map). */
export function withoutHelmLabels(object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  const labels = copy.metadata.labels;
  if (labels !== undefined) {
    for (const label of HELM_STANDARD_LABELS) delete labels[label];
    if (Object.keys(labels).length === 0) delete copy.metadata.labels;
  }
  return copy;
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
