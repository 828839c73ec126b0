/**
 * How a runtime's parts go into the pod. What the pod already has wins: a container or volume name it has makes
 * the runtime a conflict, and a volume, a metadata key or a mount path it has is never written over.
 */
import type { PodEditor, Segment } from './editor.js';
import { skip, type InjectionReport } from './report.js';
import type { Container, ContainerList, EnvVar, MetadataMap, Pod, Volume, VolumeMount } from './types.js';

/**
 * Whether the runtime must be skipped because one of the containers it adds has the name of a container or
 * init container the pod already has (Kubernetes refuses duplicate names); records the skip when it must.
 */
export function skippedForNameConflict(
  editor: PodEditor,
  runtime: string,
  added: readonly Container[],
  report: InjectionReport,
): boolean {
  const taken = firstTaken(added, containerNames(editor.pod));
  if (taken === undefined) return false;
  skip(report, runtime, 'container-name-conflict', `container name conflict: "${taken}" already exists`);
  return true;
}

/** Names of every container and init container of the pod, as they stand now. */
function containerNames(pod: Pod): Set<string> {
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

/** Where a container of the pod sits, for the editor's writes below it. */
export function containerPath(list: ContainerList, index: number): Segment[] {
  return ['spec', list, index];
}

export function appendContainers(editor: PodEditor, list: ContainerList, added: readonly Container[]): void {
  editor.append(['spec', list], added);
}

/** Adds the volumes whose names the pod does not have yet: an existing volume is never overwritten. */
export function addMissingVolumes(editor: PodEditor, volumes: readonly Volume[]): void {
  const existing = volumeNames(editor.pod);
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
