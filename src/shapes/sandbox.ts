import type { KubernetesObject } from '@kubernetes/client-node';

/**
 * A Sandbox (agents.kruise.io/v1alpha1) as the webhook reads it from the API: its spec is untyped here and read
 * field by field where it is used (src/sources/kube/sandbox-runtimes.ts, src/cli/explain/sandbox-pod.ts), since
 * the CRD is another project's and any version of it may be installed.
 */
export interface Sandbox extends KubernetesObject {
  spec?: { runtimes?: unknown; envVarsInjectionPolicy?: unknown };
}
