import type { PodEditor } from './editor.js';
import { addMissingVolumes, appendContainers, appendEnv, appendMounts } from './merge.js';
import { containerNames, firstTaken } from './pod-parts.js';
import { skip, type InjectionReport } from './report.js';
import { CSI, type RuntimeConfig } from './types.js';

/**
 * csi: env and mounts are added only where the main container has no entry of that name (the pod's own wins);
 * a postStart in the csi config is ignored by design.
 */
export function injectCsi(editor: PodEditor, config: RuntimeConfig, report: InjectionReport): void {
  const sidecars = config.csiSidecar ?? [];
  const taken = firstTaken(sidecars, containerNames(editor.pod));
  if (taken !== undefined) {
    skip(report, CSI, 'container-name-conflict', `container name conflict: "${taken}" already exists`);
    return;
  }
  const main = editor.pod.spec.containers[0];
  if (main === undefined) {
    skip(report, CSI, 'no-main-container', 'the pod has no containers');
    return;
  }

  appendEnv(editor, 0, withNewNames(config.mainContainer?.env ?? [], main.env ?? []));
  const mounts = withNewNames(config.mainContainer?.volumeMounts ?? [], main.volumeMounts ?? []);
  for (const mount of appendMounts(editor, 'containers', 0, mounts)) {
    report.warnings.push(`${CSI}: mount "${mount.name}" left out, "${main.name}" already mounts ${mount.mountPath}`);
  }
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
