/**
 * Every option of `serve`, one row each (src/options/option-row.ts): `option(flag, kind, help, schema, default)`.
 * Adding an option (cluster mode added `--kubeconfig`, `--config-namespace`, ...) is adding its row: the compiler
 * checks its default against its kind and allowed values, and whether the parsed options always hold it follows
 * from whether it has a default. Durations are read into milliseconds, hence the keys' `Ms`.
 */
import { fileURLToPath } from 'node:url';
import { POSTSTART_CONFLICT_MODES } from '../../injection/index.js';
import { formatDuration } from '../../options/duration.js';
import {
  DNS_LABEL,
  DNS_SUBDOMAIN,
  LOG_LEVELS,
  NON_EMPTY,
  option,
  PORT,
  withFormerFlags,
} from '../../options/option-row.js';
import { DEFAULT_TLS_CIPHER_SUITES, TLS_MIN_VERSIONS } from '../../server/tls/policy.js';
import { DEFAULT_TRANSPORT_LIMITS } from '../../server/transport.js';
import { DEFAULT_CONFIG_NAME, DEFAULT_CONFIG_NAMESPACE } from '../../config/injection-config.js';

export const CERT_MODES = ['auto', 'files', 'self-managed'] as const;

/** `manifests/` ships with the package; resolve it from this file so `npm start` works from any directory. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const DEFAULT_CONFIG_FILE = `${PACKAGE_ROOT}manifests/components/injection-config/injection-config.yaml`;

const MIB = 1024 * 1024;
const WITHIN_10M = { min: '0s', max: '10m' } as const;
const WITHIN_1H = { min: '1s', max: '1h' } as const;

/**
 * One row per option, ordered as `--help` prints them and the parser reports problems. The env var is the
 * flag's name under SANDBOX_INJECTOR_. Last, the flags that durations replaced (docs/cli.md, "Durations").
 */
const ROWS = {
  host: option('host', 'string', 'address to bind both listeners to', NON_EMPTY, '0.0.0.0'),
  port: option('port', 'integer', 'HTTPS webhook port (0 = pick a free port)', PORT, 8443),
  metricsPort: option(
    'metrics-port',
    'integer',
    'plain-HTTP /metrics, /healthz, /readyz port (0 = disabled)',
    PORT,
    9090,
  ),
  configFile: option(
    'config-file',
    'string',
    'injection ConfigMap manifest (YAML or JSON), watched',
    NON_EMPTY,
    DEFAULT_CONFIG_FILE,
  ),
  tlsCertFile: option('tls-cert-file', 'string', 'serving certificate (PEM, may hold a chain), watched', NON_EMPTY),
  tlsKeyFile: option('tls-key-file', 'string', 'serving private key (PEM), watched', NON_EMPTY),
  tlsClientCaFile: option('tls-client-ca-file', 'string', 'require client certificates issued by this CA', NON_EMPTY),
  selfSignedDir: option(
    'self-signed-dir',
    'string',
    'where a self-signed CA and cert are made when no cert is given',
    NON_EMPTY,
    'certs',
  ),
  logLevel: option('log-level', 'string', LOG_LEVELS.join('|'), { enum: LOG_LEVELS }, 'info'),
  shutdownDelayMs: option(
    'shutdown-delay',
    'duration',
    'keep serving this long after SIGTERM, not ready',
    WITHIN_10M,
    '0s',
  ),
  shutdownTimeoutMs: option('shutdown-timeout', 'duration', 'wait this long for in-flight reviews', WITHIN_1H, '25s'),
  requestTimeoutMs: option(
    'request-timeout',
    'duration',
    'headers and body must arrive within this (408), and a stalled connection is closed after it',
    WITHIN_1H,
    formatDuration(DEFAULT_TRANSPORT_LIMITS.requestTimeoutMs),
  ),
  idleTimeoutMs: option(
    'idle-timeout',
    'duration',
    'close kept-alive connections idle this long',
    WITHIN_1H,
    formatDuration(DEFAULT_TRANSPORT_LIMITS.idleTimeoutMs),
  ),
  maxConnections: option(
    'max-connections',
    'integer',
    'at this many, a new connection first closes one arriving past the slow-client grace, else the longest idle; else it is closed',
    { minimum: 1, maximum: 1_000_000 },
    DEFAULT_TRANSPORT_LIMITS.maxConnections,
  ),
  slowClientGraceMs: option(
    'slow-client-grace',
    'duration',
    'a connection still arriving (handshake, headers, body) after this long may be closed for others at the connection cap or byte budget',
    { min: '0s', max: '1h' },
    formatDuration(DEFAULT_TRANSPORT_LIMITS.slowClientGraceMs),
  ),
  maxBodyBytes: option(
    'max-body-bytes',
    'integer',
    'largest request body read (413 past it)',
    { minimum: 1024, maximum: 1024 * MIB },
    DEFAULT_TRANSPORT_LIMITS.maxBodyBytes,
  ),
  maxInflightBytes: option(
    'max-inflight-bytes',
    'integer',
    'request bodies and unsent answers held at once, all connections (503 past it)',
    { minimum: 1024, maximum: 16 * 1024 * MIB },
    DEFAULT_TRANSPORT_LIMITS.maxInflightBytes,
  ),
  maxUnreadBytes: option(
    'max-unread-bytes',
    'integer',
    'unsent answer bytes a connection may hold when it sends its next request (closed past it)',
    { minimum: 0, maximum: 1024 * MIB },
    DEFAULT_TRANSPORT_LIMITS.maxUnreadBytes,
  ),
  tlsMinVersion: option(
    'tls-min-version',
    'string',
    TLS_MIN_VERSIONS.join('|'),
    { enum: TLS_MIN_VERSIONS },
    'VersionTLS12',
  ),
  tlsCipherSuites: option(
    'tls-cipher-suites',
    'string',
    'TLS 1.2 cipher suites, comma-separated IANA names (ECDHE with AEAD only)',
    NON_EMPTY,
    DEFAULT_TLS_CIPHER_SUITES.join(','),
  ),
  kubeconfig: option(
    'kubeconfig',
    'string',
    'cluster mode with this kubeconfig (in a pod: the service account)',
    NON_EMPTY,
  ),
  configNamespace: option(
    'config-namespace',
    'string',
    'namespace of the injection ConfigMap (cluster mode)',
    DNS_LABEL,
    DEFAULT_CONFIG_NAMESPACE,
  ),
  configName: option(
    'config-name',
    'string',
    'name of the injection ConfigMap (cluster mode)',
    DNS_SUBDOMAIN,
    DEFAULT_CONFIG_NAME,
  ),
  allowAnnotationRuntimes: option(
    'allow-annotation-runtimes',
    'boolean',
    'cluster mode: honour runtime annotations on pods without a Sandbox owner',
    {},
    false,
  ),
  trustedCreators: option(
    'trusted-creators',
    'string',
    'cluster mode: only these may create Sandbox-owned pods; comma-separated NAME|user:NAME|group:NAME (unset: everyone)',
    // The list's grammar is read by src/sandbox/trusted-creators.ts, whose message says what is wrong.
    NON_EMPTY,
  ),
  wrapperImage: option('wrapper-image', 'string', 'image whose init container installs run_with_envs.sh', NON_EMPTY),
  agentRuntimeHasWrapper: option(
    'agent-runtime-has-wrapper',
    'boolean',
    'the agent-runtime image carries run_with_envs.sh: add no wrapper init container',
    {},
    false,
  ),
  warnUnwrapped: option(
    'warn-unwrapped',
    'boolean',
    'Auto: also warn of what cannot wait for the claim (network probes, containers without command)',
    {},
    false,
  ),
  postStartConflict: option(
    'poststart-conflict',
    'string',
    `${POSTSTART_CONFLICT_MODES.join('|')}: main container and agent-runtime both have a postStart hook`,
    { enum: POSTSTART_CONFLICT_MODES },
    'skip',
  ),
  certMode: option(
    'cert-mode',
    'string',
    `${CERT_MODES.join('|')}: given files, or a CA and cert kept in a Secret`,
    { enum: CERT_MODES },
    'auto',
  ),
  certNamespace: option(
    'cert-namespace',
    'string',
    'namespace of the certificate Secret and the Service',
    DNS_LABEL,
    'sandbox-injector-system',
  ),
  certSecretName: option(
    'cert-secret-name',
    'string',
    'Secret holding the self-managed CA and certificate',
    DNS_SUBDOMAIN,
    'sandbox-injector-tls',
  ),
  serviceName: option(
    'service-name',
    'string',
    'Service in front of the webhook (named by the certificate)',
    DNS_LABEL,
    'sandbox-injector',
  ),
  webhookConfigName: option(
    'webhook-config-name',
    'string',
    'MutatingWebhookConfiguration whose caBundle is kept in step',
    DNS_SUBDOMAIN,
    'sandbox-injector',
  ),
  certDir: option(
    'cert-dir',
    'string',
    'where self-managed mode writes the serving pair',
    NON_EMPTY,
    'certs/self-managed',
  ),
  certExtraSans: option(
    'cert-extra-sans',
    'string',
    'extra DNS names/IPs for the self-managed certificate, comma-separated',
    NON_EMPTY,
  ),
  certPollMs: option(
    'cert-poll',
    'duration',
    "re-read the certificate Secret this often (another replica's renewal)",
    { min: '1s', max: '24h' },
    '1m',
  ),
};

export const SERVE_OPTION_ROWS = withFormerFlags(ROWS, {
  shutdownDelayMs: ['shutdown-delay-seconds', 's'],
  shutdownTimeoutMs: ['shutdown-timeout-seconds', 's'],
  requestTimeoutMs: ['request-timeout-seconds', 's'],
  idleTimeoutMs: ['idle-timeout-seconds', 's'],
  slowClientGraceMs: ['slow-client-grace-milliseconds', 'ms'],
  certPollMs: ['cert-poll-seconds', 's'],
});
