/**
 * deliver-env's failures: a claim's variables not delivered into its pod, or an ended claim's files not cleared.
 * Each goes out as a Warning Event on the Sandbox and an `env delivery failed` log line; none has a status.
 */
import { define } from './failure.js';

const NO_STATUS = undefined;

/** What envd's requests report: the operation and path (`what`), and what went wrong with it. */
const envdMessage = (what: string, problem: string): string => `${what}: ${problem}`;
const refusalMessage = (reason: string): string => `request refused: ${reason}`;

export const DELIVERY_FAILURES = {
  envdUnavailable: define(
    'SI_ENVD_UNAVAILABLE',
    NO_STATUS,
    'delivery',
    'envd could not be reached or its answer read (transport error, timeout, 5xx, 408, 429, a Move whose source vanished): retried with backoff',
    envdMessage,
  ),
  envdUnauthorized: define(
    'SI_ENVD_UNAUTHORIZED',
    NO_STATUS,
    'delivery',
    'envd answered 401 or 403: it does not take the token (or the --file-user); not retried until the Sandbox changes',
    envdMessage,
  ),
  envdRejected: define(
    'SI_ENVD_REJECTED',
    NO_STATUS,
    'delivery',
    'envd answered another 4xx, or a redirect (never followed); not retried until the Sandbox changes',
    envdMessage,
  ),
  leaseTermEnded: define(
    'SI_LEASE_TERM_ENDED',
    NO_STATUS,
    'delivery',
    "a request to envd not sent, or cut, because this replica's Lease term ended: not reported, the next leader delivers",
    envdMessage,
  ),
  envRequestRefused: define(
    'SI_ENV_REQUEST_REFUSED',
    NO_STATUS,
    'delivery',
    'the Sandbox asks for what cannot be delivered (a bad variable name or value, a bad token, runtime URL or TLS port)',
    refusalMessage,
  ),
  runtimeUrlRefused: define(
    'SI_RUNTIME_URL_REFUSED',
    NO_STATUS,
    'delivery',
    "a runtime URL annotation whose host is not the pod's IP, without --trust-runtime-url: nothing is sent",
    refusalMessage,
  ),
  runtimeTlsUnconfigured: define(
    'SI_RUNTIME_TLS_UNCONFIGURED',
    NO_STATUS,
    'delivery',
    'a runtime that serves TLS while no usable bundle is configured (--runtime-tls-secret): nothing is sent in clear',
    refusalMessage,
  ),
  podRecycled: define(
    'SI_POD_RECYCLED',
    NO_STATUS,
    'delivery',
    'a claim for a pod that served an earlier claim (.env_recycled) whose wrapped containers have not restarted since, or with --recycled-pods=recreate: nothing is sent',
    refusalMessage,
  ),
  runtimeTlsRequired: define(
    'SI_RUNTIME_TLS_REQUIRED',
    NO_STATUS,
    'delivery',
    'a runtime that serves plain HTTP (no runtime-tls-port) while --require-runtime-tls is on: nothing is sent in clear',
    refusalMessage,
  ),
} as const;
