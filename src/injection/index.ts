/**
 * The injection: a pod and the runtimes asked for it in, the edited pod and its RFC 6902 patch out, with no I/O.
 * The rules are docs/policy.md, "The injection rules"; in the order `injectRuntimes` applies them:
 *
 * 1. Settled runtimes. The status annotation (status.ts) records what earlier admissions of this pod injected,
 *    found present and skipped. Those runtimes are left as they are, so a reinvocation changes nothing, and a
 *    runtime skipped then is not tried again on a pod that later runtimes changed.
 * 2. Order. The other asked runtimes, each once: agent-runtime, then csi, then the rest in the order asked. Each
 *    is injected or skipped on its own, all or nothing, and one's skip never changes another's outcome.
 * 3. Present. A runtime whose config adds containers, all already in the pod in the same list with the same name
 *    and image (the Sandbox controller injected it itself), is recorded as present and left alone.
 * 4. Conflicts, then injection, by kind. Every kind is skipped when a container it adds has the name of one the
 *    pod has (merge.ts). agent-runtime (agent-runtime.ts) is also skipped when its config and the main container
 *    both have a valid postStart, unless --poststart-conflict=merge chains two exec hooks (or keeps the main
 *    container's); then it appends its sidecars, sets the config's postStart, appends env as is and the mounts
 *    whose paths are free. csi (csi.ts) adds only the env and mounts whose names the main container lacks, and
 *    ignores postStart. A generic runtime (generic.ts) is also skipped for a volume name the pod has; it adds the
 *    labels and annotations the pod lacks and appends its containers. All add only the volumes the pod lacks, and
 *    agent-runtime and csi are skipped in a pod without containers.
 * 5. traffic-proxy's health-probe rewrite (traffic-proxy-probes.ts). With traffic-proxy in the pod (injected now
 *    or before, or present) and the pod asking for it, the other containers' network probes and hooks are sent
 *    through the proxy, and the proxy is told where the app answers them. Before Auto, so that Auto sees the
 *    probes as the kubelet will run them.
 * 6. Auto (env-wrapper.ts). Decided once every runtime is done, since it needs agent-runtime's sidecars in the
 *    pod (injected now or before); without them, or with the main container holding /var/sandbox with another
 *    volume, nothing is wrapped and a warning says why. Otherwise the sandbox-env volume and the mounts of the
 *    main container and the sidecars are added, the pod's own containers with a command are chosen for wrapping
 *    (not those a runtime brought, nor one with another volume at /var/sandbox), and the wrapper's installer is
 *    added when one is given and a command uses the wrapper.
 * 7. The status. When runtimes were asked, the annotation records this admission's outcome beside the earlier
 *    ones, unless it already says exactly that, with the revision of the config keys of the runtimes it holds.
 * 8. Wrapping, last. The chosen containers' commands and exec probes are wrapped as the editor's final edits,
 *    which copy nothing and after which no other edit is made (editor.ts).
 *
 * Every edit is recorded as the operation that makes it as it is made, so the patch is ready when the edit ends.
 */
import { STATUS_ANNOTATION } from '../sandbox/api.js';
import { injectAgentRuntime, type PostStartConflict } from './agent-runtime.js';
import { injectCsi } from './csi.js';
import { PodEditor, type EditOperation } from './editor.js';
import type { JsonPointers } from './pointers.js';
import { wrapForEnvInjection, type WrapperInstaller } from './env-wrapper.js';
import { injectGeneric } from './generic.js';
import { emptyReport, type InjectionReport } from './report.js';
import { recordedStatus, settledRuntimes, type RecordedStatus } from '../sandbox/injection-status.js';
import { statusAfter } from './status.js';
import { rewriteProbesThroughProxy } from './traffic-proxy-probes.js';
import {
  AGENT_RUNTIME,
  CSI,
  type Container,
  type ContainerList,
  type EnvVarsInjectionPolicy,
  type Pod,
  type RuntimeConfig,
  TRAFFIC_PROXY,
} from './types.js';

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
  /** The patch's pointers, kept across the admissions of whoever makes many; without, this one makes its own. */
  pointers?: JsonPointers;
  /** The config revision of the keys used (the runtimes injected or found present), recorded in the status. */
  revision?: (used: readonly string[]) => string | undefined;
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
  const editor = new PodEditor(pod, input.pointers);
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

  // Only a pod with traffic-proxy in it pays for the look at its annotations.
  if (runtimeInPod(TRAFFIC_PROXY, before, report)) report.probeRewrite = rewriteProbesThroughProxy(editor, report);

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
        proxied: report.probeRewrite,
      },
      report,
    );
  }

  if (input.runtimes.length > 0) recordStatus(editor, statusAfter(before, report, input.revision));
  // The containers' wrapping is made of final edits: after it, the editor takes no other edit.
  wrapContainers?.();
  return new EditedPod(editor, report);
}

/** The result with the whole pod made only when asked. */
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

/** Whether an earlier admission or this one injected the runtime or found it present. */
function runtimeInPod(runtime: string, before: RecordedStatus, report: InjectionReport): boolean {
  return (
    report.injected.includes(runtime) ||
    report.present.includes(runtime) ||
    before.injected.includes(runtime) ||
    before.present.includes(runtime)
  );
}

function inOrder(runtimes: readonly RequestedRuntime[]): RequestedRuntime[] {
  const unique = runtimes.filter((r, i) => runtimes.findIndex((o) => o.name === r.name) === i);
  const rank = (name: string): number => (name === AGENT_RUNTIME ? 0 : name === CSI ? 1 : 2);
  // Array.prototype.sort is stable, so the other runtimes keep the order they were asked in.
  return unique.sort((a, b) => rank(a.name) - rank(b.name));
}

/**
 * Whether the runtime is already in the pod: every container its config adds is there, in the same list, with
 * the same name and image. That is what the Sandbox controller leaves when it injected the runtime itself before
 * creating the pod. A runtime whose config adds no container can never be told apart from an absent one.
 */
function isPresent(pod: Pod, runtime: string, config: RuntimeConfig): boolean {
  const wanted = runtimeContainers(runtime, config);
  return (
    wanted.length > 0 &&
    wanted.every(({ list, container }) =>
      (pod.spec[list] ?? []).some((c) => c.name === container.name && c.image === container.image),
    )
  );
}

/** The containers a runtime's config adds, each with the pod list it goes to. */
function runtimeContainers(runtime: string, config: RuntimeConfig): { list: ContainerList; container: Container }[] {
  const into = (list: ContainerList, containers: readonly Container[] | undefined) =>
    (containers ?? []).map((container) => ({ list, container }));
  if (runtime === AGENT_RUNTIME || runtime === CSI) return into('initContainers', config.csiSidecar);
  return [...into('initContainers', config.initContainers), ...into('containers', config.containers)];
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

export { runtimeContainers };
export type { EditOperation } from './editor.js';
export { JsonPointers } from './pointers.js';
export type { PostStartConflict } from './agent-runtime.js';
export type { WrapperInstaller } from './env-wrapper.js';
export { wrappedWithoutInstaller } from './env-wrapper.js';
export * as autoWarnings from './auto-warnings.js';
export { POSTSTART_CONFLICT_MODES } from './agent-runtime.js';
export type { InjectionReport, ProbeRewrite, ProxiedProbe, RuntimeSkip, SkipReason } from './report.js';
export { STATUS_ANNOTATION } from '../sandbox/api.js';
export * from './types.js';
