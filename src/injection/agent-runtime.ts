import { LIFECYCLE_HANDLER_KINDS } from '../kube-shapes/kubernetes.js';
import type { PodEditor } from './editor.js';
import { appendMainEnv, appendMainMounts, mainContainerOrSkip, setMainPostStart } from './main-container.js';
import { addMissingVolumes, appendContainers, skippedForNameConflict } from './merge.js';
import { skip, type InjectionReport } from './report.js';
import { AGENT_RUNTIME, type LifecycleHandler, type RuntimeConfig } from './types.js';

export const POSTSTART_CONFLICT_MODES = ['skip', 'merge'] as const;
/** skip: the spec's rule, the whole runtime is left out. merge: the Sandbox controller's current rule. */
export type PostStartConflict = (typeof POSTSTART_CONFLICT_MODES)[number];

/**
 * agent-runtime: sidecars, the main container's postStart hook, env and mounts, and volumes, all or nothing.
 * Env is appended without de-duplication on purpose: the appended value is the one that takes effect.
 */
export function injectAgentRuntime(
  editor: PodEditor,
  config: RuntimeConfig,
  report: InjectionReport,
  postStartConflict: PostStartConflict,
): void {
  const sidecars = config.csiSidecar ?? [];
  if (skippedForNameConflict(editor, AGENT_RUNTIME, sidecars, report)) return;
  const main = mainContainerOrSkip(editor, AGENT_RUNTIME, report);
  if (main === undefined) return;
  const configHook = config.mainContainer?.lifecycle?.postStart;
  const ownHook = main.lifecycle?.postStart;
  let hook = isValidHandler(configHook) ? configHook : undefined;
  if (hook !== undefined && isValidHandler(ownHook)) {
    if (postStartConflict === 'skip') {
      skip(report, AGENT_RUNTIME, 'poststart-conflict', `postStart conflict: container "${main.name}" has its own`);
      return;
    }
    hook = chainedHook(hook, ownHook);
    if (hook === undefined) {
      report.warnings.push(
        `${AGENT_RUNTIME}: postStart not added, "${main.name}" has its own and only two exec hooks can be chained`,
      );
    }
  }

  appendContainers(editor, 'initContainers', sidecars);
  if (hook !== undefined) setMainPostStart(editor, hook);
  appendMainEnv(editor, config.mainContainer?.env ?? []);
  appendMainMounts(editor, AGENT_RUNTIME, main, config.mainContainer?.volumeMounts ?? [], report);
  addMissingVolumes(editor, config.volume ?? []);
  report.injected.push(AGENT_RUNTIME);
}

/** The spec's "valid lifecycle handler": it says what to run; `postStart: {}` counts as absent. */
function isValidHandler(handler: LifecycleHandler | undefined): handler is LifecycleHandler {
  if (handler === undefined || handler === null || typeof handler !== 'object') return false;
  return LIFECYCLE_HANDLER_KINDS.some((kind) => handler[kind] !== undefined && handler[kind] !== null);
}

/**
 * The controller's merge: the config's command runs the container's own after `--`. Only two exec hooks can be
 * chained that way; otherwise the container keeps its hook (undefined here).
 */
function chainedHook(configHook: LifecycleHandler, ownHook: LifecycleHandler): LifecycleHandler | undefined {
  if (configHook.exec == null || ownHook.exec == null) return undefined;
  const command = [...(configHook.exec.command ?? []), '--', ...(ownHook.exec.command ?? [])];
  return { ...ownHook, exec: { ...ownHook.exec, command } };
}
