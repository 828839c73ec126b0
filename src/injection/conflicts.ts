import type { PodEditor } from './editor.js';
import { containerNames, firstTaken } from './pod-parts.js';
import { skip, type InjectionReport } from './report.js';
import type { Container } from './types.js';

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
