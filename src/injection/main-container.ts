import type { PodEditor } from './editor.js';
import { appendMounts } from './merge.js';
import { containerNames, firstTaken } from './pod-parts.js';
import { skip, type InjectionReport } from './report.js';
import type { Container, VolumeMount } from './types.js';

/**
 * What agent-runtime and csi both need before anything is added: none of their sidecar names may be taken,
 * and the pod must have a main container. Returns that container, or undefined after recording the skip.
 */
export function mainContainerFor(
  editor: PodEditor,
  runtime: string,
  sidecars: readonly Container[],
  report: InjectionReport,
): Container | undefined {
  const taken = firstTaken(sidecars, containerNames(editor.pod));
  if (taken !== undefined) {
    skip(report, runtime, 'container-name-conflict', `container name conflict: "${taken}" already exists`);
    return undefined;
  }
  const main = editor.pod.spec.containers[0];
  if (main === undefined) skip(report, runtime, 'no-main-container', 'the pod has no containers');
  return main;
}

/** Appends mounts to the main container, and says which were left out for a mountPath it already uses. */
export function appendMainMounts(
  editor: PodEditor,
  runtime: string,
  main: Container,
  mounts: readonly VolumeMount[],
  report: InjectionReport,
): void {
  for (const mount of appendMounts(editor, 'containers', 0, mounts)) {
    report.warnings.push(`${runtime}: mount "${mount.name}" left out, "${main.name}" already mounts ${mount.mountPath}`);
  }
}
