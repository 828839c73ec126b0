/**
 * The Kubernetes shapes the injection reads and writes, derived from their one declaration (src/kube-shapes/kubernetes.ts):
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
} from '../kube-shapes/kubernetes.js';

export {
  AGENT_RUNTIME,
  CSI,
  ENV_VARS_INJECTION_POLICIES,
  TRAFFIC_PROXY,
  type EnvVarsInjectionPolicy,
} from '../sandbox/api.js';
