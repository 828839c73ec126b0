import { injectAgentRuntime } from './agent-runtime.js';
import { injectCsi } from './csi.js';
import { PodEditor } from './editor.js';
import { wrapForEnvInjection } from './env-wrapper.js';
import { injectGeneric } from './generic.js';
import { emptyReport, skip, type InjectionReport } from './report.js';
import { previouslyInjected, STATUS_ANNOTATION, statusAfter } from './status.js';
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
  /** Image carrying run_with_envs.sh, for clusters whose agent-runtime image does not have it. */
  wrapperImage?: string;
}

export interface InjectionResult {
  /** The mutated pod; shares every unchanged subtree with the input, which is never modified. */
  pod: Pod;
  changed: boolean;
  report: InjectionReport;
}

/** Applies the asked runtimes to a pod: agent-runtime first, then csi, then the rest in the order asked. */
export function injectRuntimes(pod: Pod, input: InjectionInput): InjectionResult {
  const editor = new PodEditor(pod);
  const report = emptyReport();
  const before = previouslyInjected(pod);

  for (const { name, config } of inOrder(input.runtimes)) {
    if (before.has(name)) {
      skip(report, name, 'already-injected', 'already injected by an earlier admission');
    } else if (name === AGENT_RUNTIME) {
      injectAgentRuntime(editor, config, report);
    } else if (name === CSI) {
      injectCsi(editor, config, report);
    } else {
      injectGeneric(editor, name, config, report);
    }
  }

  if (input.policy === 'Auto') {
    const agentRuntime =
      input.runtimes.find((r) => r.name === AGENT_RUNTIME)?.config ?? input.allConfigs?.get(AGENT_RUNTIME);
    wrapForEnvInjection(
      editor,
      {
        sidecarNames: (agentRuntime?.csiSidecar ?? []).map((c) => c.name),
        injectedNow: report.injected.includes(AGENT_RUNTIME),
        injectedContainerNames: templateContainerNames(input.runtimes),
        wrapperImage: input.wrapperImage,
      },
      report,
    );
  }

  if (editor.changed) recordStatus(editor, before, report);
  return { pod: editor.pod, changed: editor.changed, report };
}

function inOrder(runtimes: readonly RequestedRuntime[]): RequestedRuntime[] {
  const unique = runtimes.filter((r, i) => runtimes.findIndex((o) => o.name === r.name) === i);
  const rank = (name: string): number => (name === AGENT_RUNTIME ? 0 : name === CSI ? 1 : 2);
  // Array.prototype.sort is stable, so the other runtimes keep the order they were asked in.
  return unique.sort((a, b) => rank(a.name) - rank(b.name));
}

/** Containers a generic runtime template adds to spec.containers: never the pod's own, even on reinvocation. */
function templateContainerNames(runtimes: readonly RequestedRuntime[]): Set<string> {
  const names = new Set<string>();
  for (const { name, config } of runtimes) {
    if (name === AGENT_RUNTIME || name === CSI) continue;
    for (const c of config.containers ?? []) names.add(c.name);
  }
  return names;
}

/** The status annotation is written only along with a real change, so an unchanged pod gets no patch at all. */
function recordStatus(editor: PodEditor, before: ReadonlySet<string>, report: InjectionReport): void {
  const metadata = editor.own(editor.root(), 'metadata', () => ({}));
  const annotations = editor.own(metadata, 'annotations', (): Record<string, string> => ({}));
  annotations[STATUS_ANNOTATION] = statusAfter(before, report);
}

export type { InjectionReport, RuntimeSkip, SkipReason } from './report.js';
export { STATUS_ANNOTATION } from './status.js';
export * from './types.js';
