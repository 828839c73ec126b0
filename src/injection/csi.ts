import type { PodEditor } from './editor.js';
import { appendMainEnv, appendMainMounts, mainContainerOrSkip } from './main-container.js';
import { addMissingVolumes, appendContainers, skippedForNameConflict } from './merge.js';
import type { InjectionReport } from './report.js';
import { CSI, type RuntimeConfig } from './types.js';

/**
 * csi: env and mounts are added only where the main container has no entry of that name (the pod's own wins);
 * a postStart in the csi config is ignored by design.
 */
export function injectCsi(editor: PodEditor, config: RuntimeConfig, report: InjectionReport): void {
  const sidecars = config.csiSidecar ?? [];
  if (skippedForNameConflict(editor, CSI, sidecars, report)) return;
  const main = mainContainerOrSkip(editor, CSI, report);
  if (main === undefined) return;

  appendMainEnv(editor, withNewNames(config.mainContainer?.env ?? [], main.env ?? []));
  const mounts = withNewNames(config.mainContainer?.volumeMounts ?? [], main.volumeMounts ?? []);
  appendMainMounts(editor, CSI, main, mounts, report);
  appendContainers(editor, 'initContainers', sidecars);
  addMissingVolumes(editor, config.volume ?? []);
  report.injected.push(CSI);
}

/** The entries whose names are not in `existing`, nor earlier in `added` itself. */
function withNewNames<T extends { name: string }>(added: readonly T[], existing: readonly { name: string }[]): T[] {
  const seen = new Set(existing.map((e) => e.name));
  return added.filter((entry) => {
    if (seen.has(entry.name)) return false;
    seen.add(entry.name);
    return true;
  });
}
