import type { Pod } from './types.js';

/** Names of every container and init container of the pod, as they stand now. */
export function containerNames(pod: Pod): Set<string> {
  const names = new Set<string>();
  for (const c of pod.spec.containers) names.add(c.name);
  for (const c of pod.spec.initContainers ?? []) names.add(c.name);
  return names;
}

export function volumeNames(pod: Pod): Set<string> {
  return new Set((pod.spec.volumes ?? []).map((v) => v.name));
}

/** The first name in `wanted` that `taken` already has, if any. */
export function firstTaken(wanted: readonly { name: string }[], taken: ReadonlySet<string>): string | undefined {
  return wanted.find((item) => taken.has(item.name))?.name;
}
