import type { KubernetesObject } from '@kubernetes/client-node';

/**
 * OpenKruise Agents' Sandbox API as this project speaks it, every name spelled here and nowhere else in src/
 * (test/sandbox/api.test.ts fails on a `kruise.io` anywhere else): the API's group, version and
 * resource; the labels and annotations its controller and sandbox-manager write on a Sandbox and on its pod
 * (api/v1alpha1 and pkg/utils/runtime upstream); the names the injection rules give the runtimes, the pod's
 * annotations and the status annotation (docs/policy.md, "The injection rules"); and the names of our own that
 * live under the API's domain. A rename upstream is one edit here.
 */

export const SANDBOX_GROUP = 'agents.kruise.io';
export const SANDBOX_VERSION = 'v1alpha1';
export const SANDBOX_API_VERSION = `${SANDBOX_GROUP}/${SANDBOX_VERSION}`;
export const SANDBOX_KIND = 'Sandbox';
export const SANDBOX_PLURAL = 'sandboxes';

/**
 * A Sandbox as the webhook reads it from the API: its spec is untyped here and read field by field where it is
 * used (src/admission/sandbox-runtimes.ts, src/cli/explain/sandbox-pod.ts), since the CRD is another
 * project's and any version of it may be installed.
 */
export interface Sandbox extends KubernetesObject {
  spec?: { runtimes?: unknown; envVarsInjectionPolicy?: unknown };
}

/** The pool: a SandboxSet keeps its unclaimed Sandboxes as their controller owner, and a claim removes it. */
export const SANDBOX_SET_KIND = 'SandboxSet';

/** The label, and the annotation, the Sandbox controller puts on every pod it creates, with CREATED_BY_SANDBOX. */
export const CREATED_BY = 'agents.kruise.io/created-by';
export const CREATED_BY_SANDBOX = 'sandbox';
/** The label selector of the pods the Sandbox controller made. */
export const SANDBOX_POD_SELECTOR = `${CREATED_BY}=${CREATED_BY_SANDBOX}`;

/** The runtimes the injection rules treat apart; every other name is a generic runtime. */
export const AGENT_RUNTIME = 'agent-runtime';
export const CSI = 'csi';
/**
 * The generic runtime whose template brings an Istio-style proxy; with it in the pod, the controller also routes
 * the pod's network probes through the proxy when the pod asks for it (upstream's traffic-proxy package).
 */
export const TRAFFIC_PROXY = 'traffic-proxy';
/** `"true"` asks for that rewrite of the probes. */
export const HEALTH_PROBE_REWRITE_ANNOTATION = 'networking.agents.kruise.io/health-probe-rewrite';
/** The name of the proxy container that takes the probes over, when it is not the default. */
export const SIDECAR_PROXY_ANNOTATION = 'networking.agents.kruise.io/sidecar-proxy';

/** `spec.envVarsInjectionPolicy`: Auto makes the pod's processes wait for the claim's environment. */
export type EnvVarsInjectionPolicy = 'None' | 'Auto';
export const ENV_VARS_INJECTION_POLICIES: readonly EnvVarsInjectionPolicy[] = ['None', 'Auto'];

/** The pod's own choice of runtimes (comma-separated) and policy, where the operator lets a pod choose. */
export const RUNTIMES_ANNOTATION = 'agents.kruise.io/runtimes';
export const POLICY_ANNOTATION = 'agents.kruise.io/env-vars-injection-policy';
/** Records what the webhook did to a pod, for people and for the next admission of the same pod. */
export const STATUS_ANNOTATION = 'agents.kruise.io/runtime-injection-status';

/** What a claim asks of the runtime: JSON with `envVars`, `accessToken`, `skipRefresh`. */
export const INIT_RUNTIME_REQUEST = 'agents.kruise.io/init-runtime-request';
export const RUNTIME_URL = 'agents.kruise.io/runtime-url';
export const LEGACY_ENVD_URL = 'e2b.agents.kruise.io/envd-url';
export const RUNTIME_ACCESS_TOKEN = 'agents.kruise.io/runtime-access-token';
export const LEGACY_ACCESS_TOKEN = 'e2b.agents.kruise.io/envd-access-token';
export const CLAIM_TIMESTAMP = 'agents.kruise.io/claim-timestamp';
/** The port at which a runtime serves HTTPS; absent or empty, it serves plain HTTP. */
export const RUNTIME_TLS_PORT = 'agents.kruise.io/runtime-tls-port';
/** The label `true` on a claimed Sandbox. */
export const SANDBOX_CLAIMED = 'agents.kruise.io/sandbox-claimed';
/**
 * The name a TLS runtime's certificate is verified against, SNI included: the pod IP is dialled, which has no
 * DNS name, and the runtime's certificate is issued for a wildcard of which this name is one instance.
 */
export const RUNTIME_TLS_SERVER_NAME = 'agentruntime.sandbox.agents.kruise.io';

/** Ours, under the API's domain: the prefix of the annotations on the webhook's certificate Secret. */
export const INJECTOR_DOMAIN = 'sandbox-injector.agents.kruise.io';
