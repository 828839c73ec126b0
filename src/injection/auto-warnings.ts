import { ENV_DIR, WRAPPER_PATH } from '../wrapper/env-dir.js';

/**
 * Every line EnvVarsInjectionPolicy Auto says about a pod, one function per kind, so the tests and the docs
 * (docs/policy.md quotes each) read the same text. Each puts its reason first: kube-apiserver advises warnings
 * of at most 120 characters and the webhook cuts longer ones at the end (src/admission/warnings.ts), so what is
 * lost to a long name is the detail, never why. The whole line goes into the log and `explain`.
 */

/** The probes a container may have, in the order the kubelet runs them. */
export type ProbeName = 'startupProbe' | 'livenessProbe' | 'readinessProbe';
/** The probe handlers the kubelet runs itself, over the network; only `exec` runs in the container. */
export type NetworkProbeHandler = 'httpGet' | 'tcpSocket' | 'grpc';

export const NETWORK_PROBE_HANDLERS: readonly NetworkProbeHandler[] = ['httpGet', 'tcpSocket', 'grpc'];
/**
 * How the kubelet reaches the app: the probe's handler, or `via proxy` for one that traffic-proxy's rewrite sends
 * through the proxy, which still asks the waiting app (the status annotation names the proxy).
 */
export type ProbeWay = NetworkProbeHandler | 'via proxy';
export const VIA_PROXY: ProbeWay = 'via proxy';

/** A network readiness probe on a wrapped container: the app is held until the claim, so the pod is never Ready. */
export function readinessProbeWarning(container: string, way: ProbeWay): string {
  return `Auto: not Ready until claimed, pool never fills: "${container}" readinessProbe ${way}; use an exec probe`;
}

/** A network liveness or startup probe on a wrapped container: it fails while the app waits, and the kubelet restarts it. */
export function restartingProbeWarning(
  container: string,
  probe: 'startupProbe' | 'livenessProbe',
  way: ProbeWay,
): string {
  return `Auto: restarted until claimed: "${container}" ${probe} ${way} fails meanwhile; use an exec probe`;
}

/** The text for any network probe: readiness and the two that restart differ in what they do to the pod. */
export function networkProbeWarning(container: string, probe: ProbeName, way: ProbeWay): string {
  return probe === 'readinessProbe'
    ? readinessProbeWarning(container, way)
    : restartingProbeWarning(container, probe, way);
}

/** A container of the pod's own with no `command`: it runs its image's entrypoint at once, unclaimed. */
export function noCommandWarning(container: string): string {
  return `Auto: starts unclaimed, without the claim's env: "${container}" has no command to wrap; give it one`;
}

export function noAgentRuntimeWarning(): string {
  return 'Auto: nothing wrapped, no agent-runtime to write the env: commands would wait forever';
}

/** The main container holds the env folder with another volume: envd, which runs there, cannot write the env. */
export function mainMountBlocksWarning(main: string, volume: string): string {
  return `Auto: nothing wrapped, envd cannot write the env: main container "${main}" has "${volume}" at ${ENV_DIR}`;
}

export function containerMountBlocksWarning(container: string, volume: string): string {
  return `Auto: not wrapped, the env never reaches it: "${container}" has "${volume}" at ${ENV_DIR}`;
}

export function sidecarMountKeptWarning(sidecar: string): string {
  return `Auto: sidecar "${sidecar}" left without the env volume: it has another volume at ${ENV_DIR}`;
}

/**
 * For the offline commands (`inject`, `explain`) run without `--wrapper-image`: the Deployment sets one, so the
 * pod they print lacks the init container the webhook would add.
 */
export function noWrapperImageNote(): string {
  return (
    'no --wrapper-image: the pod shown has no sandbox-env-wrapper init container, so its wrapped commands wait ' +
    `for ${WRAPPER_PATH}, which nothing installs unless the agent-runtime image carries it ` +
    '(the Deployment sets one: SANDBOX_INJECTOR_WRAPPER_IMAGE)'
  );
}
