/**
 * The Kubernetes shapes the injection reads and writes. Only the fields the rules look at are typed;
 * everything else rides along untouched as unknown properties.
 */
export type JsonObject = { [key: string]: unknown };

export interface EnvVar extends JsonObject {
  name: string;
}

export interface VolumeMount extends JsonObject {
  name: string;
  mountPath: string;
}

export interface Volume extends JsonObject {
  name: string;
}

export interface LifecycleHandler extends JsonObject {
  exec?: { command?: string[] } & JsonObject;
  httpGet?: JsonObject;
  tcpSocket?: JsonObject;
  sleep?: JsonObject;
}

export interface Lifecycle extends JsonObject {
  postStart?: LifecycleHandler;
  preStop?: LifecycleHandler;
}

export interface Probe extends JsonObject {
  exec?: { command?: string[] } & JsonObject;
}

export interface Container extends JsonObject {
  name: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  volumeMounts?: VolumeMount[];
  lifecycle?: Lifecycle;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
}

export interface PodSpec extends JsonObject {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
}

export interface ObjectMeta extends JsonObject {
  name?: string;
  generateName?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference extends JsonObject {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
}

export interface Pod extends JsonObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PodSpec;
}

export type EnvVarsInjectionPolicy = 'None' | 'Auto';
export const ENV_VARS_INJECTION_POLICIES: readonly EnvVarsInjectionPolicy[] = ['None', 'Auto'];

/** What one ConfigMap key says a runtime adds. Field names are the ones existing clusters use. */
export interface RuntimeConfig {
  mainContainer?: Pick<Container, 'env' | 'volumeMounts' | 'lifecycle'> & JsonObject;
  /** Sidecars appended to initContainers; the name is historical, every runtime uses it. */
  csiSidecar?: Container[];
  volume?: Volume[];
  initContainers?: Container[];
  containers?: Container[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export const AGENT_RUNTIME = 'agent-runtime';
export const CSI = 'csi';
