import type { PodEditor } from './editor.js';
import {
  addMissingMetadata,
  addMissingVolumes,
  appendContainers,
  firstTaken,
  skippedForNameConflict,
  volumeNames,
} from './merge.js';
import { skip, type InjectionReport } from './report.js';
import type { RuntimeConfig } from './types.js';

/** Any runtime other than agent-runtime and csi: a template of containers, volumes, labels and annotations. */
export function injectGeneric(
  editor: PodEditor,
  runtime: string,
  config: RuntimeConfig,
  report: InjectionReport,
): void {
  const containers = [...(config.initContainers ?? []), ...(config.containers ?? [])];
  if (skippedForNameConflict(editor, runtime, containers, report)) return;
  const takenVolume = firstTaken(config.volume ?? [], volumeNames(editor.pod));
  if (takenVolume !== undefined) {
    skip(report, runtime, 'volume-name-conflict', `volume name conflict: "${takenVolume}" already exists`);
    return;
  }

  addMissingMetadata(editor, 'labels', config.labels);
  addMissingMetadata(editor, 'annotations', config.annotations);
  appendContainers(editor, 'initContainers', config.initContainers ?? []);
  appendContainers(editor, 'containers', config.containers ?? []);
  addMissingVolumes(editor, config.volume ?? []);
  report.injected.push(runtime);
}
