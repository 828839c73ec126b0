import type { PodEditor } from './editor.js';
import type { Container, EnvVar, PodSpec, Volume, VolumeMount } from './types.js';

type ContainerList = 'containers' | 'initContainers';

function editSpec(editor: PodEditor): PodSpec {
  return editor.own(editor.root(), 'spec', (): PodSpec => ({ containers: [] }));
}

export function editContainer(editor: PodEditor, list: ContainerList, index: number): Container {
  const containers = editor.own(editSpec(editor), list, (): Container[] => []);
  return editor.own(containers, index, (): Container => ({ name: '' }));
}

export function appendContainers(editor: PodEditor, list: ContainerList, added: readonly Container[]): void {
  if (added.length === 0) return;
  editor.own(editSpec(editor), list, (): Container[] => []).push(...added);
}

/** Adds the volumes whose names the pod does not have yet: an existing volume is never overwritten. */
export function addMissingVolumes(editor: PodEditor, volumes: readonly Volume[]): void {
  const existing = new Set((editor.pod.spec.volumes ?? []).map((v) => v.name));
  const missing = volumes.filter((v) => {
    if (existing.has(v.name)) return false;
    existing.add(v.name);
    return true;
  });
  if (missing.length === 0) return;
  editor.own(editSpec(editor), 'volumes', (): Volume[] => []).push(...missing);
}

/** Adds the entries whose keys the map does not have yet: the pod's values win. */
export function addMissingMetadata(
  editor: PodEditor,
  field: 'labels' | 'annotations',
  entries: Readonly<Record<string, string>> | undefined,
): void {
  if (entries === undefined) return;
  const current = editor.pod.metadata?.[field] ?? {};
  const missing = Object.keys(entries).filter((key) => !Object.hasOwn(current, key));
  if (missing.length === 0) return;
  const metadata = editor.own(editor.root(), 'metadata', () => ({}));
  const target = editor.own(metadata, field, (): Record<string, string> => ({}));
  for (const key of missing) target[key] = entries[key] as string;
}

export function appendEnv(editor: PodEditor, index: number, env: readonly EnvVar[]): void {
  if (env.length === 0) return;
  const container = editContainer(editor, 'containers', index);
  editor.own(container, 'env', (): EnvVar[] => []).push(...env);
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
  if (accepted.length > 0) {
    const container = editContainer(editor, list, index);
    editor.own(container, 'volumeMounts', (): VolumeMount[] => []).push(...accepted);
  }
  return refused;
}
