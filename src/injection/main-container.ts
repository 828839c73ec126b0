import type { PodEditor } from './editor.js';
import { appendMounts } from './merge.js';
import { skip, type InjectionReport } from './report.js';
import type { Container, VolumeMount } from './types.js';

/** The pod's main container (spec.containers[0]), or undefined after recording the runtime's skip. */
export function mainContainerOrSkip(editor: PodEditor, runtime: string, report: InjectionReport): Container | undefined {
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
