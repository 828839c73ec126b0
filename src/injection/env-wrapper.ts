import { relativePath, type PodEditor } from './editor.js';
import { addMissingVolumes, appendContainers, appendMounts, containerPath } from './merge.js';
import type { InjectionReport } from './report.js';
import type { Container, Volume, VolumeMount } from './types.js';

/**
 * The wrapper every wrapped command and exec probe starts with. These lists are shared by every pod and go into
 * patches as they are; a recorded value is never written into. Not frozen: a frozen array keeps JSON.stringify
 * off its fast path (src/sources/deep-freeze.ts).
 */
export const WRAPPER: readonly string[] = ['/bin/bash', '/var/sandbox/run_with_envs.sh'];
/** A wrapped container's command. */
const WRAPPED_COMMAND: readonly string[] = [...WRAPPER, '--'];
const WRAPPED_PROBE_PREFIX: readonly string[] = [...WRAPPER, '--probe', '--'];
const SANDBOX_ENV_VOLUME = 'sandbox-env';
const SANDBOX_ENV_PATH = '/var/sandbox';
const WRAPPER_INIT_CONTAINER = 'sandbox-env-wrapper';

/** An image that can put run_with_envs.sh into the shared volume, and the command that does it there. */
export interface WrapperInstaller {
  image: string;
  command: readonly string[];
}

const PROBES = (['startupProbe', 'livenessProbe', 'readinessProbe'] as const).map((name) => ({
  name,
  command: relativePath([name, 'exec', 'command']),
}));
const ARGS = relativePath(['args']);
const COMMAND = relativePath(['command']);

export interface EnvWrapperInput {
  /** Names of the agent-runtime sidecars as the config defines them. */
  sidecarNames: readonly string[];
  /** Whether agent-runtime was injected by this admission. */
  injectedNow: boolean;
  /** Containers that an injection config put in `spec.containers`: they are not the pod's own. */
  injectedContainerNames: ReadonlySet<string>;
  /** Installs the wrapper, for clusters whose agent-runtime image does not carry it. */
  wrapper: WrapperInstaller | undefined;
}

/**
 * EnvVarsInjectionPolicy Auto: make each of the pod's own commands and exec probes wait for the per-claim
 * environment. Only done when the agent-runtime sidecars are in the pod: without them nothing would ever write
 * that environment and a wrapped command would wait forever. For the same reason nothing is done when the main
 * container, where envd runs and writes the environment from, holds /var/sandbox with another volume; and the
 * main container mounts the volume even when it is not wrapped itself.
 *
 * Everything is decided, and reported, here; the wrapped containers' own edits are returned as a last step, to
 * be run after every other edit of the injection (the status annotation included): they are the editor's final
 * edits, made without copying the containers they change.
 */
export function wrapForEnvInjection(editor: PodEditor, input: EnvWrapperInput, report: InjectionReport): () => void {
  if (!agentRuntimePresent(editor, input)) {
    report.warnings.push(
      'EnvVarsInjectionPolicy Auto: commands not wrapped, agent-runtime is not in the pod (they would wait forever)',
    );
    return () => undefined;
  }
  const containers = editor.pod.spec.containers;
  const main = containers[0];
  const mainBlocking = main === undefined ? undefined : blockingMount(main);
  if (main !== undefined && mainBlocking !== undefined) {
    // envd runs in the main container and writes the environment from there: without the volume at
    // SANDBOX_ENV_PATH it cannot, so every wrapped command would wait forever.
    report.warnings.push(
      `EnvVarsInjectionPolicy Auto: commands not wrapped, main container "${main.name}" mounts "${mainBlocking.name}" at ${SANDBOX_ENV_PATH}, where envd must write the environment`,
    );
    return () => undefined;
  }
  addMissingVolumes(editor, [sandboxEnvVolume()]);
  const wrapped: number[] = [];
  containers.forEach((container, index) => {
    if (input.injectedContainerNames.has(container.name)) return;
    if (!wantsWrapping(container)) return;
    const blocking = blockingMount(container);
    if (blocking !== undefined) {
      report.warnings.push(
        `EnvVarsInjectionPolicy Auto: "${container.name}" not wrapped, "${blocking.name}" is mounted at ${SANDBOX_ENV_PATH}`,
      );
      return;
    }
    wrapped.push(index);
    report.wrapped.push(container.name);
  });
  // envd writes the environment from inside the main container, so it mounts the volume even when not wrapped.
  if (main !== undefined && !wrapped.includes(0) && !hasSandboxEnvMount(main)) {
    appendMounts(editor, 'containers', 0, [sandboxEnvMount()]);
  }
  (editor.pod.spec.initContainers ?? []).forEach((container, index) => {
    if (input.sidecarNames.includes(container.name)) mountSandboxEnvOnSidecar(editor, index, report);
  });
  // A container already wrapped by an earlier admission uses the wrapper as much as one wrapped now.
  const usesWrapper = wrapped.length > 0 || containers.some((c) => startsWithWrapper(c.command));
  if (input.wrapper !== undefined && usesWrapper) addWrapperCopier(editor, input.wrapper);
  return () => {
    // Read before the first final edit, after which the view is not read; the edits since the decisions above
    // changed init containers, volumes and annotations, never these containers.
    const current = editor.pod.spec.containers;
    for (const index of wrapped) wrapContainer(editor, index, current[index] as Container);
  };
}

function agentRuntimePresent(editor: PodEditor, input: EnvWrapperInput): boolean {
  if (input.injectedNow) return true;
  if (input.sidecarNames.length === 0) return false;
  const initNames = new Set((editor.pod.spec.initContainers ?? []).map((c) => c.name));
  return input.sidecarNames.every((name) => initNames.has(name));
}

function startsWithWrapper(command: readonly string[] | undefined): boolean {
  return command !== undefined && command[0] === WRAPPER[0] && command[1] === WRAPPER[1];
}

function wantsWrapping(container: Container): boolean {
  return Array.isArray(container.command) && container.command.length > 0 && !startsWithWrapper(container.command);
}

function hasSandboxEnvMount(container: Container): boolean {
  return (container.volumeMounts ?? []).some((m) => m.name === SANDBOX_ENV_VOLUME);
}

function blockingMount(container: Container): VolumeMount | undefined {
  return (container.volumeMounts ?? []).find((m) => m.mountPath === SANDBOX_ENV_PATH && m.name !== SANDBOX_ENV_VOLUME);
}

/** `container` is the pod's container at `index` as the view last showed it; its edits are final edits. */
function wrapContainer(editor: PodEditor, index: number, container: Container): void {
  const place = editor.finalPlace(containerPath('containers', index));
  // concat makes each new list at its final length, where a spread grows it as it goes.
  const command = container.command ?? [];
  place.set(ARGS, command.concat(container.args ?? []));
  // The command and each probe command read here exist: replaced without looking them up again.
  place.replace(COMMAND, WRAPPED_COMMAND);
  for (const probe of PROBES) {
    const probeCommand = container[probe.name]?.exec?.command;
    if (probeCommand === undefined || probeCommand.length === 0 || startsWithWrapper(probeCommand)) continue;
    place.replace(probe.command, WRAPPED_PROBE_PREFIX.concat(probeCommand));
  }
  // blockingMount let no other mount at SANDBOX_ENV_PATH through, so the mount needs no check of its path.
  if (!hasSandboxEnvMount(container)) {
    place.append('volumeMounts', SANDBOX_ENV_MOUNTS);
  }
}

function mountSandboxEnvOnSidecar(editor: PodEditor, index: number, report: InjectionReport): void {
  const container = editor.pod.spec.initContainers?.[index];
  if (container === undefined || hasSandboxEnvMount(container)) return;
  if (appendMounts(editor, 'initContainers', index, [sandboxEnvMount()]).length > 0) {
    report.warnings.push(
      `EnvVarsInjectionPolicy Auto: sidecar "${container.name}" already mounts something at ${SANDBOX_ENV_PATH}`,
    );
  }
}

/** An init container that copies the wrapper into the shared volume before any main container starts. */
function addWrapperCopier(editor: PodEditor, { image, command }: WrapperInstaller): void {
  if ((editor.pod.spec.initContainers ?? []).some((c) => c.name === WRAPPER_INIT_CONTAINER)) return;
  const copier: Container = {
    name: WRAPPER_INIT_CONTAINER,
    image,
    command: [...command],
    volumeMounts: [sandboxEnvMount()],
  };
  appendContainers(editor, 'initContainers', [copier]);
}

function sandboxEnvVolume(): Volume {
  return { name: SANDBOX_ENV_VOLUME, emptyDir: {} };
}

const SANDBOX_ENV_MOUNTS: readonly VolumeMount[] = [Object.freeze(sandboxEnvMount())];

function sandboxEnvMount(): VolumeMount {
  return { name: SANDBOX_ENV_VOLUME, mountPath: SANDBOX_ENV_PATH };
}
