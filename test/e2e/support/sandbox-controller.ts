// The OpenKruise Agents Sandbox controller, played by the e2e tests. What it does before it creates a pod
// (facts read from openkruise/agents: pod_control.go GeneratePodFromSandbox and sidecarutils; the code here is
// our own and only as detailed as the tests need):
//
//   1. the pod is the Sandbox's template: name and namespace of the Sandbox, the template's labels,
//      annotations and spec copied as they are;
//   2. label AND annotation `agents.kruise.io/created-by: sandbox`, and the label `pod-template-hash`
//      (the Sandbox's update revision; empty before the controller computed one);
//   3. a controller ownerReference to the Sandbox (controller and blockOwnerDeletion both true);
//   4. the runtimes of spec.runtimes injected from the injection ConfigMap, in the Sandbox's order, each at
//      most once. A runtime one of whose sidecar names is already in the pod is left out.
//
// It never sets `agents.kruise.io/sandbox-name`, and it does not copy the Sandbox's own annotations.

type Json = Record<string, unknown>;

export const CREATED_BY = 'agents.kruise.io/created-by';
export const CREATED_BY_SANDBOX = 'sandbox';

export interface SandboxObject {
  metadata: { name: string; namespace: string; uid: string };
  spec: {
    runtimes?: { name: string }[];
    template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Json };
  };
}

interface Container extends Json {
  name: string;
  env?: { name: string }[];
  volumeMounts?: { name: string }[];
  lifecycle?: { postStart?: Json } & Json;
}

interface PodSpec extends Json {
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string }[];
}

/** One key of the injection ConfigMap as the controller's Go structs read it: a missing field or null is empty. */
interface RuntimeConfig {
  mainContainer: Container;
  sidecars: Container[];
  volumes: { name: string }[];
}

function readRuntimeConfig(raw: string | undefined): RuntimeConfig {
  // A missing or empty key is an empty config to the controller, not an error.
  const doc = (raw === undefined || raw === '' ? {} : JSON.parse(raw)) as Json;
  const list = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);
  const main = (doc.mainContainer ?? {}) as Container;
  return {
    mainContainer: { ...main, env: list(main.env), volumeMounts: list(main.volumeMounts) },
    sidecars: list<Container>(doc.csiSidecar),
    volumes: list(doc.volume),
  };
}

/** The controller's notion of a usable lifecycle handler: exec, httpGet or tcpSocket set. */
function validHandler(handler: unknown): boolean {
  if (handler === null || typeof handler !== 'object') return false;
  const h = handler as Json;
  return [h.exec, h.httpGet, h.tcpSocket].some((v) => v !== undefined && v !== null);
}

const hasName = (list: readonly { name: string }[] | undefined, name: string): boolean =>
  (list ?? []).some((x) => x.name === name);

/** agent-runtime: sidecars appended; the main container gets the config's env and mounts appended as they are,
 *  and its postStart only when it has none of its own; the config's volumes appended. */
function injectAgentRuntime(spec: PodSpec, config: RuntimeConfig): void {
  spec.initContainers = [...(spec.initContainers ?? []), ...structuredClone(config.sidecars)];
  const main = spec.containers[0];
  if (main === undefined) return;
  const configHook = config.mainContainer.lifecycle?.postStart;
  if (!validHandler(main.lifecycle?.postStart) && validHandler(configHook)) {
    main.lifecycle = { ...(main.lifecycle ?? {}), postStart: structuredClone(configHook) };
  }
  main.env = [...(main.env ?? []), ...structuredClone(config.mainContainer.env ?? [])];
  main.volumeMounts = [...(main.volumeMounts ?? []), ...structuredClone(config.mainContainer.volumeMounts ?? [])];
  spec.volumes = [...(spec.volumes ?? []), ...structuredClone(config.volumes)];
}

/** csi: env and mounts the main container does not have by name; sidecars appended; volumes the pod lacks. */
function injectCsi(spec: PodSpec, config: RuntimeConfig): void {
  const main = spec.containers[0];
  if (main === undefined) return;
  main.env = [...(main.env ?? [])];
  for (const env of config.mainContainer.env ?? [])
    if (!hasName(main.env, env.name)) main.env.push(structuredClone(env));
  main.volumeMounts = [...(main.volumeMounts ?? [])];
  for (const m of config.mainContainer.volumeMounts ?? [])
    if (!hasName(main.volumeMounts, m.name)) main.volumeMounts.push(structuredClone(m));
  spec.initContainers = [...(spec.initContainers ?? []), ...structuredClone(config.sidecars)];
  spec.volumes = [...(spec.volumes ?? [])];
  for (const v of config.volumes) if (!hasName(spec.volumes, v.name)) spec.volumes.push(structuredClone(v));
}

/** The runtimes of the Sandbox, injected into `spec` in place as the controller does before it creates the pod. */
export function injectAsController(
  spec: PodSpec,
  runtimes: readonly string[],
  configData: Record<string, string>,
): void {
  const seen = new Set<string>();
  for (const runtime of runtimes) {
    if (seen.has(runtime)) continue;
    seen.add(runtime);
    const config = readRuntimeConfig(configData[runtime]);
    const podNames = [...spec.containers, ...(spec.initContainers ?? [])];
    if (config.sidecars.some((s) => hasName(podNames, s.name))) continue;
    if (runtime === 'agent-runtime') injectAgentRuntime(spec, config);
    else if (runtime === 'csi') injectCsi(spec, config);
    else throw new Error(`the e2e controller stand-in only knows agent-runtime and csi, not ${runtime}`);
  }
}

export interface PodFromSandboxOptions {
  /** The injection ConfigMap's data as the controller read it; without it, nothing is injected. */
  configData?: Record<string, string>;
  /** The Sandbox's update revision, the pod's `pod-template-hash` label. */
  revision?: string;
}

/** The pod the controller would create for `sandbox`. */
export function podFromSandbox(sandbox: SandboxObject, options: PodFromSandboxOptions = {}): Json {
  const template = structuredClone(sandbox.spec.template ?? {});
  const spec = (template.spec ?? { containers: [] }) as PodSpec;
  if (options.configData !== undefined) {
    injectAsController(
      spec,
      (sandbox.spec.runtimes ?? []).map((r) => r.name),
      options.configData,
    );
  }
  const { name, namespace, uid } = sandbox.metadata;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: {
        ...(template.metadata?.labels ?? {}),
        [CREATED_BY]: CREATED_BY_SANDBOX,
        'pod-template-hash': options.revision ?? '',
      },
      annotations: { ...(template.metadata?.annotations ?? {}), [CREATED_BY]: CREATED_BY_SANDBOX },
      ownerReferences: [
        {
          apiVersion: 'agents.kruise.io/v1alpha1',
          kind: 'Sandbox',
          name,
          uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec,
  };
}
