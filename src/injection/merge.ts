import type { PodEditor, Segment } from './editor.js';
import type { Container, ContainerList, EnvVar, MetadataMap, Volume, VolumeMount } from './types.js';

/** Where a container of the pod sits, for the editor's writes below it. */
export function containerPath(list: ContainerList, index: number): Segment[] {
  return ['spec', list, index];
}

export function appendContainers(editor: PodEditor, list: ContainerList, added: readonly Container[]): void {
  editor.append(['spec', list], added);
}

/** Adds the volumes whose names the pod does not have yet: an existing volume is never overwritten. */
export function addMissingVolumes(editor: PodEditor, volumes: readonly Volume[]): void {
  const existing = new Set((editor.pod.spec.volumes ?? []).map((v) => v.name));
  const missing = volumes.filter((v) => {
    if (existing.has(v.name)) return false;
    existing.add(v.name);
    return true;
  });
  editor.append(['spec', 'volumes'], missing);
}

/** Adds the entries whose keys the map does not have yet: the pod's values win. */
export function addMissingMetadata(
  editor: PodEditor,
  field: MetadataMap,
  entries: Readonly<Record<string, string>> | undefined,
): void {
  if (entries === undefined) return;
  for (const key of Object.keys(entries)) {
    if (!editor.hasEntry(field, key)) editor.setEntry(field, key, entries[key] as string);
  }
}

export function appendEnv(editor: PodEditor, index: number, env: readonly EnvVar[]): void {
  editor.append([...containerPath('containers', index), 'env'], env);
}

/**
 * Appends mounts to a container, leaving out any whose mountPath the container already uses: Kubernetes
 * rejects duplicate mount paths. Returns the mounts left out so the caller can say so.
 */
export function appendMounts(
  editor: PodEditor,
  list: ContainerList,
  index: number,
  mounts: readonly VolumeMount[],
): VolumeMount[] {
  const current = editor.pod.spec[list]?.[index]?.volumeMounts ?? [];
  const paths = new Set(current.map((m) => m.mountPath));
  const accepted: VolumeMount[] = [];
  const refused: VolumeMount[] = [];
  for (const mount of mounts) {
    if (paths.has(mount.mountPath)) {
      refused.push(mount);
    } else {
      paths.add(mount.mountPath);
      accepted.push(mount);
    }
  }
  editor.append([...containerPath(list, index), 'volumeMounts'], accepted);
  return refused;
}
