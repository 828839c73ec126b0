import type { PodEditor } from './editor.js';
import { appendMainMounts, mainContainerFor } from './main-container.js';
import { addMissingVolumes, appendContainers, appendEnv, editContainer } from './merge.js';
import { isValidHandler } from './pod-parts.js';
import { skip, type InjectionReport } from './report.js';
import { AGENT_RUNTIME, type Lifecycle, type RuntimeConfig } from './types.js';

/**
 * agent-runtime: sidecars, the main container's postStart hook, env and mounts, and volumes, all or nothing.
 * Env is appended without de-duplication on purpose: the appended value is the one that takes effect.
 */
export function injectAgentRuntime(editor: PodEditor, config: RuntimeConfig, report: InjectionReport): void {
  const sidecars = config.csiSidecar ?? [];
  const main = mainContainerFor(editor, AGENT_RUNTIME, sidecars, report);
  if (main === undefined) return;
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
  appendMainMounts(editor, AGENT_RUNTIME, main, config.mainContainer?.volumeMounts ?? [], report);
  addMissingVolumes(editor, config.volume ?? []);
  report.injected.push(AGENT_RUNTIME);
}
