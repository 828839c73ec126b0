import { STATUS_ANNOTATION } from '../shapes/sandbox-api.js';
import { injectAgentRuntime, type PostStartConflict } from './agent-runtime.js';
import { injectCsi } from './csi.js';
import { PodEditor, type EditOperation } from './editor.js';
import { wrapForEnvInjection, type WrapperInstaller } from './env-wrapper.js';
import { injectGeneric } from './generic.js';
import { isPresent } from './present.js';
import { emptyReport, type InjectionReport } from './report.js';
import { recordedStatus, settledRuntimes, statusAfter } from './status.js';
import { AGENT_RUNTIME, CSI, type EnvVarsInjectionPolicy, type Pod, type RuntimeConfig } from './types.js';

export interface RequestedRuntime {
  name: string;
  config: RuntimeConfig;
}

export interface InjectionInput {
  /** Runtimes in the order asked, each with its config already resolved. */
  runtimes: readonly RequestedRuntime[];
  policy: EnvVarsInjectionPolicy;
  /**
   * Every config the ConfigMap holds, keyed by runtime. Auto needs agent-runtime's sidecar names even when
   * agent-runtime was injected by an earlier admission and is not asked for now.
   */
  allConfigs?: ReadonlyMap<string, RuntimeConfig>;
  /** Installs run_with_envs.sh, for clusters whose agent-runtime image does not have it. */
  wrapper?: WrapperInstaller;
  /** When the main container and agent-runtime's config both have a postStart hook: skip the runtime (default). */
  postStartConflict?: PostStartConflict;
}

export interface InjectionResult {
  /**
   * The mutated pod; shares every unchanged subtree with the input, which is never modified. Made when first
   * read: when labels or annotations were added, it copies their map, which the webhook never needs.
   */
  readonly pod: Pod;
  /** RFC 6902 operations that turn the input into `pod`, in order: the patch, recorded as the edit was made. */
  operations: readonly EditOperation[];
  changed: boolean;
  report: InjectionReport;
}

/** Applies the asked runtimes to a pod: agent-runtime first, then csi, then the rest in the order asked. */
export function injectRuntimes(pod: Pod, input: InjectionInput): InjectionResult {
  const editor = new PodEditor(pod);
  const report = emptyReport();
  const before = recordedStatus(pod);
  // Runtimes an earlier admission decided on are left alone: a reinvocation must change nothing, and a
  // runtime skipped then may look different now only because of what later runtimes added.
  const settled = settledRuntimes(before);

  for (const { name, config } of inOrder(input.runtimes)) {
    if (settled.has(name)) continue;
    if (isPresent(editor.pod, name, config)) {
      report.present.push(name);
    } else if (name === AGENT_RUNTIME) {
      injectAgentRuntime(editor, config, report, input.postStartConflict ?? 'skip');
    } else if (name === CSI) {
      injectCsi(editor, config, report);
    } else {
      injectGeneric(editor, name, config, report);
    }
  }

  let wrapContainers: (() => void) | undefined;
  if (input.policy === 'Auto') {
    const agentRuntime =
      input.runtimes.find((r) => r.name === AGENT_RUNTIME)?.config ?? input.allConfigs?.get(AGENT_RUNTIME);
    const inPod = new Set([...before.injected, ...before.present, ...report.injected, ...report.present]);
    wrapContainers = wrapForEnvInjection(
      editor,
      {
        sidecarNames: (agentRuntime?.csiSidecar ?? []).map((c) => c.name),
        injectedNow: report.injected.includes(AGENT_RUNTIME),
        injectedContainerNames: templateContainerNames(input.runtimes, inPod),
        wrapper: input.wrapper,
      },
      report,
    );
  }

  if (input.runtimes.length > 0) recordStatus(editor, statusAfter(before, report));
  // The containers' wrapping is made of final edits: after it, the editor takes no other edit.
  wrapContainers?.();
  return new EditedPod(editor, report);
}

/**
 * The result with the whole pod made only when asked. A class rather than an object literal with a getter: V8
 * gives each such literal a map of its own, which held every admission's copies until a full collection.
 */
class EditedPod implements InjectionResult {
  readonly operations: readonly EditOperation[];
  readonly changed: boolean;

  constructor(
    private readonly editor: PodEditor,
    readonly report: InjectionReport,
  ) {
    this.operations = editor.operations;
    this.changed = editor.changed;
  }

  get pod(): Pod {
    return this.editor.result();
  }
}

function inOrder(runtimes: readonly RequestedRuntime[]): RequestedRuntime[] {
  const unique = runtimes.filter((r, i) => runtimes.findIndex((o) => o.name === r.name) === i);
  const rank = (name: string): number => (name === AGENT_RUNTIME ? 0 : name === CSI ? 1 : 2);
  // Array.prototype.sort is stable, so the other runtimes keep the order they were asked in.
  return unique.sort((a, b) => rank(a.name) - rank(b.name));
}

/**
 * Containers that a generic runtime in the pod (injected now, found present, or recorded earlier) put in
 * spec.containers: they are the runtime's, not the pod's own. A skipped runtime brought none, so a container of
 * the pod that merely shares a name with its template is the pod's own.
 */
function templateContainerNames(runtimes: readonly RequestedRuntime[], inPod: ReadonlySet<string>): Set<string> {
  const names = new Set<string>();
  for (const { name, config } of runtimes) {
    if (name === AGENT_RUNTIME || name === CSI || !inPod.has(name)) continue;
    for (const c of config.containers ?? []) names.add(c.name);
  }
  return names;
}

/**
 * Every pod that asked for runtimes carries the status, so its absence means the webhook never saw the pod. It
 * is left alone when it already says the same, which keeps a reinvocation's patch empty.
 */
function recordStatus(editor: PodEditor, status: string): void {
  if (editor.entry('annotations', STATUS_ANNOTATION) !== status)
    editor.setEntry('annotations', STATUS_ANNOTATION, status);
}

export type { EditOperation } from './editor.js';
export type { PostStartConflict } from './agent-runtime.js';
export type { WrapperInstaller } from './env-wrapper.js';
export { wrappedWithoutInstaller } from './env-wrapper.js';
export * as autoWarnings from './auto-warnings.js';
export { POSTSTART_CONFLICT_MODES } from './agent-runtime.js';
export type { InjectionReport, RuntimeSkip, SkipReason } from './report.js';
export { STATUS_ANNOTATION } from '../shapes/sandbox-api.js';
export * from './types.js';
