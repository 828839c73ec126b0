/**
 * Process options: read from flags and environment in this one place, validated once against one schema,
 * frozen, and passed down. Nothing deeper in the code reads `process.env` or `process.argv`.
 *
 * To add an option (cluster mode adds `--kubeconfig`, `--config-namespace`, ...): add the field to
 * `ServeOptions`, its entry to `OPTION_SPECS` and its property to `SCHEMA`. The `satisfies` and
 * `JSONSchemaType` checks below make the compiler refuse the change until all three agree.
 */
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Ajv, type JSONSchemaType, type ErrorObject } from 'ajv';
import { DEFAULT_TRANSPORT_LIMITS, type TransportLimits } from './server/transport.js';
import {
  DEFAULT_TLS_CIPHER_SUITES,
  TLS_MIN_VERSIONS,
  cipherSuiteProblems,
  splitCipherSuites,
  tlsPolicy,
  type TlsMinVersionName,
  type TlsPolicy,
} from './server/tls/policy.js';
import { POSTSTART_CONFLICT_MODES, type PostStartConflict, type WrapperInstaller } from './injection/index.js';
import { IMAGE_INSTALL_COMMAND } from './wrapper/installer.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ServeOptions {
  /** Address both listeners bind to. */
  host: string;
  /** HTTPS webhook port; 0 picks a free port (the bound address is logged). */
  port: number;
  /** Plain-HTTP port for /metrics, /healthz and /readyz; 0 disables that listener. */
  metricsPort: number;
  /** ConfigMap manifest (YAML or JSON) holding the injection config; watched for changes. */
  configFile: string;
  /** Serving certificate and key; both or neither. Neither: a self-signed pair is made in selfSignedDir. */
  tlsCertFile?: string;
  tlsKeyFile?: string;
  /** When set, only clients presenting a certificate issued by this CA are served. */
  tlsClientCaFile?: string;
  /** Where the self-signed CA and serving pair live when no certificate files are given. */
  selfSignedDir: string;
  logLevel: LogLevel;
  /** Seconds to keep serving after SIGTERM while /readyz reports 503, so endpoints can drop the pod first. */
  shutdownDelaySeconds: number;
  /** Seconds to wait for in-flight reviews after the listener closes before connections are cut. */
  shutdownTimeoutSeconds: number;
  /** A request's headers and body must arrive within this; also the longest a connection may stall mid-exchange. */
  requestTimeoutSeconds: number;
  /** Kept-alive connections idle this long are closed. */
  idleTimeoutSeconds: number;
  /** Connections past this many are closed when accepted. */
  maxConnections: number;
  /** Largest request body read (413 past it). */
  maxBodyBytes: number;
  /** Request bodies being received plus answers not yet sent, across all connections (503 past it). */
  maxInflightBytes: number;
  /** Unsent answer bytes a connection may hold when its next request arrives (closed past it). */
  maxUnreadBytes: number;
  /** Lowest TLS version, in kube-apiserver's naming. */
  tlsMinVersion: TlsMinVersionName;
  /** TLS 1.2 cipher suites, comma-separated IANA names as kube-apiserver's --tls-cipher-suites takes them. */
  tlsCipherSuites?: string;
  /** Cluster mode with this kubeconfig; without it, cluster mode only when running in a pod. */
  kubeconfig?: string;
  /** The injection ConfigMap watched in cluster mode. */
  configNamespace: string;
  configName: string;
  /** Honour the runtime/policy pod annotations in cluster mode, for pods without a Sandbox owner. */
  allowAnnotationRuntimes: boolean;
  /** Cluster mode: the only users (`NAME`, `user:NAME`) and groups (`group:NAME`) whose pods may claim a Sandbox owner. */
  trustedCreators?: string;
  /** Image with run_with_envs.sh, added as an init container to pods whose commands are wrapped. */
  wrapperImage?: string;
  /** The agent-runtime image carries run_with_envs.sh itself: no wrapper init container, whatever wrapperImage says. */
  agentRuntimeHasWrapper: boolean;
  /** A postStart hook on both the main container and agent-runtime's config: skip the runtime, or chain them. */
  postStartConflict: PostStartConflict;
  /** files: serve the given pair; self-managed: a CA and cert kept in a Secret; auto: pick by what is given. */
  certMode: CertMode;
  certNamespace: string;
  certSecretName: string;
  /** The Service in front of the webhook: the serving certificate names it. */
  serviceName: string;
  /** The MutatingWebhookConfiguration whose caBundle self-managed mode keeps in step. */
  webhookConfigName: string;
  /** Where self-managed mode writes the pair the server reads (a writable emptyDir in the pod). */
  certDir: string;
  /** Extra DNS names or IPs for the self-managed serving certificate, comma-separated. */
  certExtraSans?: string;
  /** How often self-managed mode re-reads the Secret, adopting another replica's renewal. */
  certPollSeconds: number;
}

export const CERT_MODES = ['auto', 'files', 'self-managed'] as const;
export type CertMode = (typeof CERT_MODES)[number];

type OptionKind = 'string' | 'integer' | 'boolean';

interface OptionSpec {
  /** Long flag name, without the leading dashes. */
  readonly flag: string;
  readonly env: string;
  readonly kind: OptionKind;
  readonly description: string;
}

const ENV_PREFIX = 'SANDBOX_INJECTOR_';

function spec(flag: string, kind: OptionKind, description: string): OptionSpec {
  return { flag, env: ENV_PREFIX + flag.toUpperCase().replaceAll('-', '_'), kind, description };
}

/** One row per option: flag, env var and help text. Ordered as `--help` prints them. */
export const OPTION_SPECS = {
  host: spec('host', 'string', 'address to bind both listeners to'),
  port: spec('port', 'integer', 'HTTPS webhook port (0 = pick a free port)'),
  metricsPort: spec('metrics-port', 'integer', 'plain-HTTP /metrics, /healthz, /readyz port (0 = disabled)'),
  configFile: spec('config-file', 'string', 'injection ConfigMap manifest (YAML or JSON), watched'),
  tlsCertFile: spec('tls-cert-file', 'string', 'serving certificate (PEM, may hold a chain), watched'),
  tlsKeyFile: spec('tls-key-file', 'string', 'serving private key (PEM), watched'),
  tlsClientCaFile: spec('tls-client-ca-file', 'string', 'require client certificates issued by this CA'),
  selfSignedDir: spec('self-signed-dir', 'string', 'where a self-signed CA and cert are made when no cert is given'),
  logLevel: spec('log-level', 'string', LOG_LEVELS.join('|')),
  shutdownDelaySeconds: spec('shutdown-delay-seconds', 'integer', 'keep serving this long after SIGTERM, not ready'),
  shutdownTimeoutSeconds: spec('shutdown-timeout-seconds', 'integer', 'wait this long for in-flight reviews'),
  requestTimeoutSeconds: spec('request-timeout-seconds', 'integer', 'headers and body must arrive within this (408), and a stalled connection is closed after it'),
  idleTimeoutSeconds: spec('idle-timeout-seconds', 'integer', 'close kept-alive connections idle this long'),
  maxConnections: spec('max-connections', 'integer', 'connections past this many are closed when accepted'),
  maxBodyBytes: spec('max-body-bytes', 'integer', 'largest request body read (413 past it)'),
  maxInflightBytes: spec('max-inflight-bytes', 'integer', 'request bodies and unsent answers held at once, all connections (503 past it)'),
  maxUnreadBytes: spec('max-unread-bytes', 'integer', 'unsent answer bytes a connection may hold when it sends its next request (closed past it)'),
  tlsMinVersion: spec('tls-min-version', 'string', `${TLS_MIN_VERSIONS.join('|')}`),
  tlsCipherSuites: spec('tls-cipher-suites', 'string', 'TLS 1.2 cipher suites, comma-separated IANA names (ECDHE with AEAD only)'),
  kubeconfig: spec('kubeconfig', 'string', 'cluster mode with this kubeconfig (in a pod: the service account)'),
  configNamespace: spec('config-namespace', 'string', 'namespace of the injection ConfigMap (cluster mode)'),
  configName: spec('config-name', 'string', 'name of the injection ConfigMap (cluster mode)'),
  allowAnnotationRuntimes: spec('allow-annotation-runtimes', 'boolean', 'cluster mode: honour runtime annotations on pods without a Sandbox owner'),
  trustedCreators: spec('trusted-creators', 'string', 'cluster mode: only these may create Sandbox-owned pods; comma-separated NAME|user:NAME|group:NAME (unset: everyone)'),
  wrapperImage: spec('wrapper-image', 'string', 'image whose init container installs run_with_envs.sh'),
  agentRuntimeHasWrapper: spec('agent-runtime-has-wrapper', 'boolean', 'the agent-runtime image carries run_with_envs.sh: add no wrapper init container'),
  postStartConflict: spec('poststart-conflict', 'string', `${POSTSTART_CONFLICT_MODES.join('|')}: main container and agent-runtime both have a postStart hook`),
  certMode: spec('cert-mode', 'string', `${CERT_MODES.join('|')}: given files, or a CA and cert kept in a Secret`),
  certNamespace: spec('cert-namespace', 'string', 'namespace of the certificate Secret and the Service'),
  certSecretName: spec('cert-secret-name', 'string', 'Secret holding the self-managed CA and certificate'),
  serviceName: spec('service-name', 'string', 'Service in front of the webhook (named by the certificate)'),
  webhookConfigName: spec('webhook-config-name', 'string', 'MutatingWebhookConfiguration whose caBundle is kept in step'),
  certDir: spec('cert-dir', 'string', 'where self-managed mode writes the serving pair'),
  certExtraSans: spec('cert-extra-sans', 'string', 'extra DNS names/IPs for the self-managed certificate, comma-separated'),
  certPollSeconds: spec('cert-poll-seconds', 'integer', "re-read the certificate Secret this often (another replica's renewal)"),
} as const satisfies Record<keyof ServeOptions, OptionSpec>;

type OptionKey = keyof typeof OPTION_SPECS;

/** `manifests/` ships with the package; resolve it from this file so `npm start` works from any directory. */
const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DEFAULT_CONFIG_FILE = `${PACKAGE_ROOT}manifests/injection-config.yaml`;

const DEFAULTS = {
  host: '0.0.0.0',
  port: 8443,
  metricsPort: 9090,
  configFile: DEFAULT_CONFIG_FILE,
  selfSignedDir: 'certs',
  logLevel: 'info',
  shutdownDelaySeconds: 0,
  shutdownTimeoutSeconds: 25,
  requestTimeoutSeconds: DEFAULT_TRANSPORT_LIMITS.requestTimeoutMs / 1000,
  idleTimeoutSeconds: DEFAULT_TRANSPORT_LIMITS.idleTimeoutMs / 1000,
  maxConnections: DEFAULT_TRANSPORT_LIMITS.maxConnections,
  maxBodyBytes: DEFAULT_TRANSPORT_LIMITS.maxBodyBytes,
  maxInflightBytes: DEFAULT_TRANSPORT_LIMITS.maxInflightBytes,
  maxUnreadBytes: DEFAULT_TRANSPORT_LIMITS.maxUnreadBytes,
  tlsMinVersion: 'VersionTLS12',
  tlsCipherSuites: DEFAULT_TLS_CIPHER_SUITES.join(','),
  configNamespace: 'sandbox-system',
  configName: 'sandbox-injection-config',
  allowAnnotationRuntimes: false,
  agentRuntimeHasWrapper: false,
  postStartConflict: 'skip',
  certMode: 'auto',
  certNamespace: 'sandbox-system',
  certSecretName: 'sandbox-injector-tls',
  serviceName: 'sandbox-injector',
  webhookConfigName: 'sandbox-injector',
  certDir: 'certs/self-managed',
  certPollSeconds: 60,
} as const satisfies Partial<ServeOptions>;

const DNS_LABEL = '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$';
const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$';
// Comma-separated entries, none empty, and no `user:` or `group:` without a name: a stray comma must not pass
// for a deliberate list. Parsed by parseTrustedCreators in src/sources/kube/sandbox-runtimes.ts.
const TRUSTED_CREATOR = String.raw`\s*(?!(?:user|group):\s*(?:,|$))[^\s,][^,]*`;
const TRUSTED_CREATORS = `^${TRUSTED_CREATOR}(?:,${TRUSTED_CREATOR})*$`;

const SCHEMA: JSONSchemaType<ServeOptions> = {
  type: 'object',
  additionalProperties: false,
  properties: {
    host: { type: 'string', minLength: 1, default: DEFAULTS.host },
    port: { type: 'integer', minimum: 0, maximum: 65535, default: DEFAULTS.port },
    metricsPort: { type: 'integer', minimum: 0, maximum: 65535, default: DEFAULTS.metricsPort },
    configFile: { type: 'string', minLength: 1, default: DEFAULTS.configFile },
    tlsCertFile: { type: 'string', minLength: 1, nullable: true },
    tlsKeyFile: { type: 'string', minLength: 1, nullable: true },
    tlsClientCaFile: { type: 'string', minLength: 1, nullable: true },
    selfSignedDir: { type: 'string', minLength: 1, default: DEFAULTS.selfSignedDir },
    logLevel: { type: 'string', enum: [...LOG_LEVELS], default: DEFAULTS.logLevel },
    shutdownDelaySeconds: { type: 'integer', minimum: 0, maximum: 600, default: DEFAULTS.shutdownDelaySeconds },
    shutdownTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: DEFAULTS.shutdownTimeoutSeconds },
    requestTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: DEFAULTS.requestTimeoutSeconds },
    idleTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: DEFAULTS.idleTimeoutSeconds },
    maxConnections: { type: 'integer', minimum: 1, maximum: 1_000_000, default: DEFAULTS.maxConnections },
    maxBodyBytes: { type: 'integer', minimum: 1024, maximum: 1024 * 1024 * 1024, default: DEFAULTS.maxBodyBytes },
    maxInflightBytes: { type: 'integer', minimum: 1024, maximum: 16 * 1024 * 1024 * 1024, default: DEFAULTS.maxInflightBytes },
    maxUnreadBytes: { type: 'integer', minimum: 0, maximum: 1024 * 1024 * 1024, default: DEFAULTS.maxUnreadBytes },
    tlsMinVersion: { type: 'string', enum: [...TLS_MIN_VERSIONS], default: DEFAULTS.tlsMinVersion },
    tlsCipherSuites: { type: 'string', minLength: 1, nullable: true, default: DEFAULTS.tlsCipherSuites },
    kubeconfig: { type: 'string', minLength: 1, nullable: true },
    configNamespace: { type: 'string', pattern: DNS_LABEL, default: DEFAULTS.configNamespace },
    configName: { type: 'string', pattern: DNS_SUBDOMAIN, default: DEFAULTS.configName },
    allowAnnotationRuntimes: { type: 'boolean', default: DEFAULTS.allowAnnotationRuntimes },
    trustedCreators: { type: 'string', pattern: TRUSTED_CREATORS, nullable: true },
    wrapperImage: { type: 'string', minLength: 1, nullable: true },
    agentRuntimeHasWrapper: { type: 'boolean', default: DEFAULTS.agentRuntimeHasWrapper },
    postStartConflict: { type: 'string', enum: [...POSTSTART_CONFLICT_MODES], default: DEFAULTS.postStartConflict },
    certMode: { type: 'string', enum: [...CERT_MODES], default: DEFAULTS.certMode },
    certNamespace: { type: 'string', pattern: DNS_LABEL, default: DEFAULTS.certNamespace },
    certSecretName: { type: 'string', pattern: DNS_SUBDOMAIN, default: DEFAULTS.certSecretName },
    serviceName: { type: 'string', pattern: DNS_LABEL, default: DEFAULTS.serviceName },
    webhookConfigName: { type: 'string', pattern: DNS_SUBDOMAIN, default: DEFAULTS.webhookConfigName },
    certDir: { type: 'string', minLength: 1, default: DEFAULTS.certDir },
    certExtraSans: { type: 'string', minLength: 1, nullable: true },
    certPollSeconds: { type: 'integer', minimum: 1, maximum: 86_400, default: DEFAULTS.certPollSeconds },
  },
  required: [
    'host',
    'port',
    'metricsPort',
    'configFile',
    'selfSignedDir',
    'logLevel',
    'shutdownDelaySeconds',
    'shutdownTimeoutSeconds',
    'requestTimeoutSeconds',
    'idleTimeoutSeconds',
    'maxConnections',
    'maxBodyBytes',
    'maxInflightBytes',
    'maxUnreadBytes',
    'tlsMinVersion',
    'configNamespace',
    'configName',
    'allowAnnotationRuntimes',
    'agentRuntimeHasWrapper',
    'postStartConflict',
    'certMode',
    'certNamespace',
    'certSecretName',
    'serviceName',
    'webhookConfigName',
    'certDir',
    'certPollSeconds',
  ],
};

// Compiled once at module load; coerceTypes turns the strings of flags and env into integers and booleans.
const validate = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true }).compile(SCHEMA);

export class OptionsError extends Error {
  override readonly name = 'OptionsError';
  readonly code = 'ERR_INVALID_OPTIONS';
  constructor(readonly problems: readonly string[]) {
    super(problems.join('; '));
  }
}

export type ParsedCommandLine = { kind: 'help' } | { kind: 'options'; options: Readonly<ServeOptions> };

/**
 * Flags win over environment variables, which win over defaults. An empty environment variable counts as
 * unset, because Kubernetes manifests often template `value: ""` for "not configured".
 */
export function parseServeOptions(argv: readonly string[], env: NodeJS.ProcessEnv): ParsedCommandLine {
  const flags = readFlags(argv);
  if (flags.help === true) return { kind: 'help' };

  const raw: Record<string, unknown> = {};
  for (const key of optionKeys()) {
    const { flag, env: envName } = OPTION_SPECS[key];
    const fromFlag = flags[flag];
    const fromEnv = env[envName];
    if (fromFlag !== undefined) raw[key] = fromFlag;
    else if (fromEnv !== undefined && fromEnv !== '') raw[key] = fromEnv;
  }

  if (!validate(raw)) throw new OptionsError((validate.errors ?? []).map(describeSchemaError));
  const problems = crossFieldProblems(raw);
  if (problems.length > 0) throw new OptionsError(problems);
  return { kind: 'options', options: Object.freeze(raw) };
}

function readFlags(argv: readonly string[]): Record<string, string | boolean | undefined> {
  const parseOptions: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const key of optionKeys()) {
    const { flag, kind } = OPTION_SPECS[key];
    parseOptions[flag] = { type: kind === 'boolean' ? 'boolean' : 'string' };
  }
  try {
    const { values } = parseArgs({ args: [...argv], options: parseOptions, strict: true, allowPositionals: false });
    return values;
  } catch (error) {
    throw new OptionsError([error instanceof Error ? error.message : String(error)]);
  }
}

function crossFieldProblems(options: ServeOptions): string[] {
  const problems: string[] = [];
  if ((options.tlsCertFile === undefined) !== (options.tlsKeyFile === undefined)) {
    problems.push(`${label('tlsCertFile')} and ${label('tlsKeyFile')} must be given together`);
  }
  if (options.certMode === 'files' && options.tlsCertFile === undefined) {
    problems.push(`${label('certMode')} files needs ${label('tlsCertFile')} and ${label('tlsKeyFile')}`);
  }
  if (options.certMode === 'self-managed' && options.tlsCertFile !== undefined) {
    problems.push(`${label('certMode')} self-managed makes its own certificate: drop ${label('tlsCertFile')}`);
  }
  if (options.metricsPort !== 0 && options.metricsPort === options.port) {
    problems.push(`${label('metricsPort')} must differ from ${label('port')}`);
  }
  if (options.maxInflightBytes < options.maxBodyBytes) {
    problems.push(`${label('maxInflightBytes')} must be at least ${label('maxBodyBytes')}: one whole body must fit`);
  }
  if (options.tlsCipherSuites !== undefined) {
    for (const problem of cipherSuiteProblems(splitCipherSuites(options.tlsCipherSuites), options.tlsMinVersion)) {
      problems.push(`${label('tlsCipherSuites')}: ${problem}`);
    }
  }
  return problems;
}

function describeSchemaError(error: ErrorObject): string {
  const key = error.instancePath.slice(1);
  const where = isOptionKey(key) ? label(key) : 'options';
  const values = (error.params as { allowedValues?: unknown }).allowedValues;
  const allowed = error.keyword === 'enum' && Array.isArray(values) ? ` (${values.join(', ')})` : '';
  return `${where}: ${error.message ?? 'is invalid'}${allowed}`;
}

function label(key: OptionKey): string {
  return `--${OPTION_SPECS[key].flag} (${OPTION_SPECS[key].env})`;
}

function isOptionKey(key: string): key is OptionKey {
  return Object.hasOwn(OPTION_SPECS, key);
}

function optionKeys(): OptionKey[] {
  return Object.keys(OPTION_SPECS).filter(isOptionKey);
}

/** How reviews inject, as the options say; the CLI's review and inject take the same choices as flags. */
export function injectionSettings(options: Readonly<ServeOptions>): {
  postStartConflict: PostStartConflict;
  wrapper?: WrapperInstaller;
} {
  const image = options.agentRuntimeHasWrapper ? undefined : options.wrapperImage;
  const wrapper = image === undefined ? {} : { wrapper: { image, command: IMAGE_INSTALL_COMMAND } };
  return { postStartConflict: options.postStartConflict, ...wrapper };
}

/** The webhook port's limits, as the options say (seconds and bytes, here in the units Node takes). */
export function transportLimits(options: Readonly<ServeOptions>): TransportLimits {
  return {
    requestTimeoutMs: options.requestTimeoutSeconds * 1000,
    idleTimeoutMs: options.idleTimeoutSeconds * 1000,
    maxConnections: options.maxConnections,
    maxBodyBytes: options.maxBodyBytes,
    maxInflightBytes: options.maxInflightBytes,
    maxUnreadBytes: options.maxUnreadBytes,
  };
}

/** The TLS versions and suites, as the options say; the parser has already refused bad names. */
export function tlsPolicyOf(options: Readonly<ServeOptions>): TlsPolicy {
  const suites = options.tlsCipherSuites === undefined ? DEFAULT_TLS_CIPHER_SUITES : splitCipherSuites(options.tlsCipherSuites);
  return tlsPolicy(options.tlsMinVersion, suites);
}

/** `serve --help`: one line per option, generated from the same table the parser uses. */
export function serveUsage(): string {
  const width = Math.max(...optionKeys().map((key) => OPTION_SPECS[key].flag.length)) + 4;
  const rows = optionKeys().map((key) => {
    const { flag, env, description } = OPTION_SPECS[key];
    const fallback: string | number | boolean | undefined = (DEFAULTS as Partial<ServeOptions>)[key];
    const shown = fallback === undefined ? '' : ` [default: ${String(fallback)}]`;
    return `  ${`--${flag}`.padEnd(width)}${description}${shown}\n  ${' '.repeat(width)}env ${env}`;
  });
  return `Usage: sandbox-injector serve [options]\n\n${rows.join('\n')}\n  ${'--help'.padEnd(width)}this text\n`;
}
