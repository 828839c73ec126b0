import type { PodEditor } from './editor.js';
import { addMissingVolumes, appendContainers, appendEnv, appendMounts, editContainer } from './merge.js';
import { containerNames, firstTaken, isValidHandler } from './pod-parts.js';
import { skip, type InjectionReport } from './report.js';
import { AGENT_RUNTIME, type Lifecycle, type RuntimeConfig } from './types.js';

/**
 * agent-runtime: sidecars, the main container's postStart hook, env and mounts, and volumes, all or nothing.
 * Env is appended without de-duplication on purpose: the appended value is the one that takes effect.
 */
export function injectAgentRuntime(editor: PodEditor, config: RuntimeConfig, report: InjectionReport): void {
  const sidecars = config.csiSidecar ?? [];
  const taken = firstTaken(sidecars, containerNames(editor.pod));
  if (taken !== undefined) {
    skip(report, AGENT_RUNTIME, 'container-name-conflict', `container name conflict: "${taken}" already exists`);
    return;
  }
  const main = editor.pod.spec.containers[0];
  if (main === undefined) {
    skip(report, AGENT_RUNTIME, 'no-main-container', 'the pod has no containers');
    return;
  }
  const postStart = config.mainContainer?.lifecycle?.postStart;
  const configHasPostStart = isValidHandler(postStart);
  if (configHasPostStart && isValidHandler(main.lifecycle?.postStart)) {
    skip(report, AGENT_RUNTIME, 'poststart-conflict', `postStart conflict: container "${main.name}" has its own`);
    return;
  }

  appendContainers(editor, 'initContainers', sidecars);
  if (configHasPostStart) {
    const edited = editContainer(editor, 'containers', 0);
    const lifecycle = editor.own(edited, 'lifecycle', (): Lifecycle => ({}));
    lifecycle.postStart = postStart;
  }
  appendEnv(editor, 0, config.mainContainer?.env ?? []);
  const refused = appendMounts(editor, 'containers', 0, config.mainContainer?.volumeMounts ?? []);
  for (const mount of refused) {
    report.warnings.push(
      `${AGENT_RUNTIME}: mount "${mount.name}" left out, "${main.name}" already mounts ${mount.mountPath}`,
    );
  }
  addMissingVolumes(editor, config.volume ?? []);
  report.injected.push(AGENT_RUNTIME);
}
