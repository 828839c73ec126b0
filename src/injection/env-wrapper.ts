import type { PodEditor } from './editor.js';
import { addMissingVolumes, appendContainers, appendMounts, containerPath } from './merge.js';
import type { InjectionReport } from './report.js';
import type { Container, Volume, VolumeMount } from './types.js';

/** The wrapper every wrapped command and exec probe starts with. */
export const WRAPPER = Object.freeze(['/bin/bash', '/var/sandbox/run_with_envs.sh']);
/** A wrapped container's command, shared by every pod: a recorded value is never written into. */
const WRAPPED_COMMAND = Object.freeze([...WRAPPER, '--']);
const WRAPPED_PROBE_PREFIX = Object.freeze([...WRAPPER, '--probe', '--']);
const SANDBOX_ENV_VOLUME = 'sandbox-env';
const SANDBOX_ENV_PATH = '/var/sandbox';
const WRAPPER_INIT_CONTAINER = 'sandbox-env-wrapper';

/** An image that can put run_with_envs.sh into the shared volume, and the command that does it there. */
export interface WrapperInstaller {
  image: string;
  command: readonly string[];
}

const PROBES = ['startupProbe', 'livenessProbe', 'readinessProbe'] as const;

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
 * that environment and a wrapped command would wait forever.
 */
export function wrapForEnvInjection(editor: PodEditor, input: EnvWrapperInput, report: InjectionReport): void {
  if (!agentRuntimePresent(editor, input)) {
    report.warnings.push(
      'EnvVarsInjectionPolicy Auto: commands not wrapped, agent-runtime is not in the pod (they would wait forever)',
    );
    return;
  }
  addMissingVolumes(editor, [sandboxEnvVolume()]);
  editor.pod.spec.containers.forEach((container, index) => {
    if (input.injectedContainerNames.has(container.name)) return;
    if (!wantsWrapping(container)) return;
    const blocking = blockingMount(container);
    if (blocking !== undefined) {
      report.warnings.push(
        `EnvVarsInjectionPolicy Auto: "${container.name}" not wrapped, "${blocking.name}" is mounted at ${SANDBOX_ENV_PATH}`,
      );
      return;
    }
    wrapContainer(editor, index, container);
    report.wrapped.push(container.name);
  });
  (editor.pod.spec.initContainers ?? []).forEach((container, index) => {
    if (input.sidecarNames.includes(container.name)) mountSandboxEnvOnSidecar(editor, index, report);
  });
  if (input.wrapper !== undefined && usesWrapper(editor)) addWrapperCopier(editor, input.wrapper);
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

function blockingMount(container: Container): VolumeMount | undefined {
  return (container.volumeMounts ?? []).find((m) => m.mountPath === SANDBOX_ENV_PATH && m.name !== SANDBOX_ENV_VOLUME);
}

/** `container` is the pod's container at `index` as edited so far; every write goes through its one cursor. */
function wrapContainer(editor: PodEditor, index: number, container: Container): void {
  const at = editor.at(containerPath('containers', index));
  // concat makes each new list at its final length, where a spread grows it as it goes.
  const command = container.command ?? [];
  at.set('args', command.concat(container.args ?? []));
  at.set('command', WRAPPED_COMMAND);
  for (const probeName of PROBES) {
    const probeCommand = container[probeName]?.exec?.command;
    if (probeCommand === undefined || probeCommand.length === 0 || startsWithWrapper(probeCommand)) continue;
    at.child(probeName).child('exec').set('command', WRAPPED_PROBE_PREFIX.concat(probeCommand));
  }
  // blockingMount let no other mount at SANDBOX_ENV_PATH through, so the mount needs no check of its path.
  if (!(container.volumeMounts ?? []).some((m) => m.name === SANDBOX_ENV_VOLUME)) {
    at.child('volumeMounts', 'array').append(SANDBOX_ENV_MOUNTS);
  }
}

function mountSandboxEnvOnSidecar(editor: PodEditor, index: number, report: InjectionReport): void {
  const container = editor.pod.spec.initContainers?.[index];
  if (container === undefined || (container.volumeMounts ?? []).some((m) => m.name === SANDBOX_ENV_VOLUME)) return;
  if (appendMounts(editor, 'initContainers', index, [sandboxEnvMount()]).length > 0) {
    report.warnings.push(
      `EnvVarsInjectionPolicy Auto: sidecar "${container.name}" already mounts something at ${SANDBOX_ENV_PATH}`,
    );
  }
}

function usesWrapper(editor: PodEditor): boolean {
  return editor.pod.spec.containers.some((c) => startsWithWrapper(c.command));
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

const SANDBOX_ENV_MOUNTS: readonly VolumeMount[] = Object.freeze([Object.freeze(sandboxEnvMount())]);

function sandboxEnvMount(): VolumeMount {
  return { name: SANDBOX_ENV_VOLUME, mountPath: SANDBOX_ENV_PATH };
}
