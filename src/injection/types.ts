/**
 * The Kubernetes shapes the injection reads and writes, derived from their one declaration (src/shapes/kubernetes.ts):
 * only the fields the rules look at are typed; everything else rides along untouched as unknown properties.
 */
export type {
  Container,
  ContainerList,
  EnvVar,
  JsonObject,
  Lifecycle,
  LifecycleHandler,
  MetadataMap,
  ObjectMeta,
  OwnerReference,
  Pod,
  PodSpec,
  Probe,
  RuntimeConfig,
  Volume,
  VolumeMount,
} from '../shapes/kubernetes.js';

export type EnvVarsInjectionPolicy = 'None' | 'Auto';
export const ENV_VARS_INJECTION_POLICIES: readonly EnvVarsInjectionPolicy[] = ['None', 'Auto'];

export { AGENT_RUNTIME, CSI, TRAFFIC_PROXY } from '../shapes/sandbox-api.js';
