import { ENV_DIR, WRAPPER_PATH } from '../wrapper/env-dir.js';
import * as say from './auto-warnings.js';
import { relativePath, type PodEditor } from './editor.js';
import { addMissingVolumes, appendContainers, appendMounts, containerPath } from './merge.js';
import type { InjectionReport, ProbeRewrite } from './report.js';
import type { Container, Pod, Volume, VolumeMount } from './types.js';

/**
 * The wrapper every wrapped command and exec probe starts with. These lists are shared by every pod and go into
 * patches as they are; a recorded value is never written into. Not frozen, as no array that goes into a patch is
 * (deepFreezeObjects, src/json/fast-json.ts).
 */
export const WRAPPER: readonly string[] = ['/bin/bash', WRAPPER_PATH];
/** A wrapped container's command. */
const WRAPPED_COMMAND: readonly string[] = [...WRAPPER, '--'];
const WRAPPED_PROBE_PREFIX: readonly string[] = [...WRAPPER, '--probe', '--'];
const SANDBOX_ENV_VOLUME = 'sandbox-env';
const SANDBOX_ENV_PATH = ENV_DIR;
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
  /** The probes traffic-proxy's rewrite sent through the proxy, when it applied. */
  proxied?: ProbeRewrite | undefined;
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
    report.warnings.push(say.noAgentRuntimeWarning());
    return () => undefined;
  }
  const containers = editor.pod.spec.containers;
  const main = containers[0];
  const mainBlocking = main === undefined ? undefined : blockingMount(main);
  if (main !== undefined && mainBlocking !== undefined) {
    // envd runs in the main container and writes the environment from there: without the volume at
    // SANDBOX_ENV_PATH it cannot, so every wrapped command would wait forever.
    report.warnings.push(say.mainMountBlocksWarning(main.name, mainBlocking.name));
    return () => undefined;
  }
  addMissingVolumes(editor, [sandboxEnvVolume()]);
  const wrapped: number[] = [];
  containers.forEach((container, index) => {
    if (input.injectedContainerNames.has(container.name)) return;
    if (!wantsWrapping(container)) {
      if (!startsWithWrapper(container.command)) report.advice.push(say.noCommandWarning(container.name));
      return;
    }
    const blocking = blockingMount(container);
    if (blocking !== undefined) {
      report.warnings.push(say.containerMountBlocksWarning(container.name, blocking.name));
      return;
    }
    wrapped.push(index);
    report.wrapped.push(container.name);
    adviseOnNetworkProbes(container, input.proxied, report);
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

/**
 * Whether a pod runs commands through the wrapper with no init container of ours to install it: right when the
 * agent-runtime image carries the script, a pod that waits forever otherwise.
 */
export function wrappedWithoutInstaller(pod: Pod): boolean {
  const wrapped = pod.spec.containers.some((c) => startsWithWrapper(c.command));
  return wrapped && !(pod.spec.initContainers ?? []).some((c) => c.name === WRAPPER_INIT_CONTAINER);
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

/**
 * The kubelet runs network probes itself, so the wrapper cannot answer them while the app waits for its claim;
 * nor can the proxy a rewritten probe now goes through, which asks the same waiting app.
 */
function adviseOnNetworkProbes(container: Container, proxied: ProbeRewrite | undefined, report: InjectionReport): void {
  for (const { name } of PROBES) {
    const probe = container[name];
    if (probe === undefined) continue;
    const handler = say.NETWORK_PROBE_HANDLERS.find((kind) => probe[kind] !== undefined && probe[kind] !== null);
    if (handler === undefined) continue;
    const viaProxy = proxied?.probes.some((p) => p.container === container.name && p.probe === name) === true;
    report.advice.push(say.networkProbeWarning(container.name, name, viaProxy ? say.VIA_PROXY : handler));
  }
}

function mountSandboxEnvOnSidecar(editor: PodEditor, index: number, report: InjectionReport): void {
  const container = editor.pod.spec.initContainers?.[index];
  if (container === undefined || hasSandboxEnvMount(container)) return;
  if (appendMounts(editor, 'initContainers', index, [sandboxEnvMount()]).length > 0) {
    report.warnings.push(say.sidecarMountKeptWarning(container.name));
  }
}

/**
 * What Pod Security `restricted` asks of every container, so the copier never gets a Sandbox pod refused: it
 * only writes one file into the emptyDir, which is writable by any user. The user is the injector image's
 * non-root one, named by number so the kubelet can check runAsNonRoot whatever the image says.
 */
const WRAPPER_COPIER_SECURITY = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};
/** One short Node process writing one file: small, so the pod's effective requests stay its containers'. */
const WRAPPER_COPIER_RESOURCES = {
  requests: { cpu: '10m', memory: '32Mi' },
  limits: { cpu: '200m', memory: '96Mi' },
};

/** An init container that copies the wrapper into the shared volume before any main container starts. */
function addWrapperCopier(editor: PodEditor, { image, command }: WrapperInstaller): void {
  if ((editor.pod.spec.initContainers ?? []).some((c) => c.name === WRAPPER_INIT_CONTAINER)) return;
  const copier: Container = {
    name: WRAPPER_INIT_CONTAINER,
    image,
    command: [...command],
    volumeMounts: [sandboxEnvMount()],
    resources: structuredClone(WRAPPER_COPIER_RESOURCES),
    securityContext: structuredClone(WRAPPER_COPIER_SECURITY),
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
