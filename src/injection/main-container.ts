import type { PodEditor } from './editor.js';
import { appendEnv, appendMounts, containerPath } from './merge.js';
import { skip, type InjectionReport } from './report.js';
import type { Container, EnvVar, LifecycleHandler, VolumeMount } from './types.js';

/** The spec's main container is the first of spec.containers; every edit of it goes through this module. */
const MAIN = 0;

/** The pod's main container, or undefined after recording the runtime's skip. */
export function mainContainerOrSkip(
  editor: PodEditor,
  runtime: string,
  report: InjectionReport,
): Container | undefined {
  const main = editor.pod.spec.containers[MAIN];
  if (main === undefined) skip(report, runtime, 'no-main-container', 'the pod has no containers');
  return main;
}

export function appendMainEnv(editor: PodEditor, env: readonly EnvVar[]): void {
  appendEnv(editor, MAIN, env);
}

export function setMainPostStart(editor: PodEditor, hook: LifecycleHandler): void {
  editor.set([...containerPath('containers', MAIN), 'lifecycle', 'postStart'], hook);
}

/** Appends mounts to the main container, and says which were left out for a mountPath it already uses. */
export function appendMainMounts(
  editor: PodEditor,
  runtime: string,
  main: Container,
  mounts: readonly VolumeMount[],
  report: InjectionReport,
): void {
  for (const mount of appendMounts(editor, 'containers', MAIN, mounts)) {
    report.warnings.push(
      `${runtime}: mount "${mount.name}" left out, "${main.name}" already mounts ${mount.mountPath}`,
    );
  }
}
