/**
 * The names delivery shares with upstream OpenKruise Agents: the annotations and labels its controller and
 * sandbox-manager write on a Sandbox (api/v1alpha1 and pkg/utils/runtime upstream), and the name a TLS
 * runtime's certificate is issued for. One home, so a rename upstream is one edit here.
 */
export const INIT_RUNTIME_REQUEST = 'agents.kruise.io/init-runtime-request';
export const RUNTIME_URL = 'agents.kruise.io/runtime-url';
export const LEGACY_ENVD_URL = 'e2b.agents.kruise.io/envd-url';
export const RUNTIME_ACCESS_TOKEN = 'agents.kruise.io/runtime-access-token';
export const LEGACY_ACCESS_TOKEN = 'e2b.agents.kruise.io/envd-access-token';
export const CLAIM_TIMESTAMP = 'agents.kruise.io/claim-timestamp';
export const RUNTIME_TLS_PORT = 'agents.kruise.io/runtime-tls-port';
/** The label that marks the pods the Sandbox controller made. */
export const CREATED_BY = 'agents.kruise.io/created-by';
export const SANDBOX_CLAIMED = 'agents.kruise.io/sandbox-claimed';
/** The name upstream's runtime certificate is verified against: the pod IP is dialled, this name is checked. */
export const RUNTIME_TLS_SERVER_NAME = 'agentruntime.sandbox.agents.kruise.io';

/**
 * Every Sandbox annotation delivery reads: what its caches keep of a Sandbox's annotations, and what its
 * decisions' `inputs` digest covers. One list, so that a new annotation cannot be read and yet be stripped.
 */
export const DELIVERY_ANNOTATIONS: readonly string[] = [
  INIT_RUNTIME_REQUEST,
  RUNTIME_URL,
  LEGACY_ENVD_URL,
  RUNTIME_ACCESS_TOKEN,
  LEGACY_ACCESS_TOKEN,
  RUNTIME_TLS_PORT,
  CLAIM_TIMESTAMP,
];
