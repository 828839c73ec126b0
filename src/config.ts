/**
 * Process options: read from flags and environment in this one place, validated once against one schema,
 * frozen, and passed down. Nothing deeper in the code reads `process.env` or `process.argv`.
 *
 * Each option is one row of `OPTION_ROWS`. The parser, the schema, the `ServeOptions` type, `--help` and the
 * docs test all read the rows, so adding an option (cluster mode added `--kubeconfig`, `--config-namespace`,
 * ...) is adding its row: the compiler checks its default against its kind and allowed values, and whether
 * the parsed options always hold it follows from whether it has a default.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type SchemaObject } from 'ajv';
import { DEFAULT_TRANSPORT_LIMITS, type TransportLimits } from './server/transport.js';
import {
  DEFAULT_TLS_CIPHER_SUITES,
  TLS_MIN_VERSIONS,
  cipherSuiteProblems,
  splitCipherSuites,
  tlsPolicy,
  type TlsPolicy,
} from './server/tls/policy.js';
import { POSTSTART_CONFLICT_MODES, type PostStartConflict, type WrapperInstaller } from './injection/index.js';
import { STARTUP_ERRORS } from './errors.js';
import { DEFAULT_CONFIG_NAME, DEFAULT_CONFIG_NAMESPACE } from './sources/injection-config.js';
import { errorMessage } from './util/error-message.js';
import { wrapperFromImage } from './wrapper/installer.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const CERT_MODES = ['auto', 'files', 'self-managed'] as const;
export type CertMode = (typeof CERT_MODES)[number];

/** `manifests/` ships with the package; resolve it from this file so `npm start` works from any directory. */
const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DEFAULT_CONFIG_FILE = `${PACKAGE_ROOT}manifests/injection-config.yaml`;

type OptionKind = 'string' | 'integer' | 'boolean';

/**
 * The JSON Schema keywords that check a value beyond its kind, handed to ajv as written. Integers must say
 * their range: an unbounded count or timeout is a typo waiting to pass.
 */
interface RulesByKind {
  string: { readonly minLength: 1 } | { readonly pattern: string } | { readonly enum: readonly string[] };
  integer: { readonly minimum: number; readonly maximum: number };
  boolean: { readonly [keyword: string]: never };
}
type Rules = RulesByKind[OptionKind];

/** A value's TypeScript type, from its kind, narrowed to the allowed values when the rules list them. */
type ValueType<K extends OptionKind, S> = S extends { readonly enum: readonly (infer V)[] }
  ? V
  : { string: string; integer: number; boolean: boolean }[K];

interface OptionRow<K extends OptionKind = OptionKind, S extends Rules = Rules, D = unknown> {
  /** Long flag name, without the leading dashes. */
  readonly flag: string;
  readonly env: string;
  readonly kind: K;
  /** The `--help` line. */
  readonly help: string;
  readonly schema: S;
  /** Taken when neither the flag nor the env var is set; `undefined` leaves the option out. */
  readonly default: D;
}

const ENV_PREFIX = 'SANDBOX_INJECTOR_';

export function option<const K extends OptionKind, const S extends RulesByKind[K]>(
  flag: string,
  kind: K,
  help: string,
  schema: S,
): OptionRow<K, S, undefined>;
export function option<const K extends OptionKind, const S extends RulesByKind[K], const D extends ValueType<K, S>>(
  flag: string,
  kind: K,
  help: string,
  schema: S,
  fallback: D,
): OptionRow<K, S, D>;
export function option(flag: string, kind: OptionKind, help: string, schema: Rules, fallback?: unknown): OptionRow {
  return { flag, env: ENV_PREFIX + flag.toUpperCase().replaceAll('-', '_'), kind, help, schema, default: fallback };
}

export const NON_EMPTY = { minLength: 1 } as const;
export const PORT = { minimum: 0, maximum: 65535 } as const;
export const DNS_LABEL = { pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' } as const;
export const DNS_SUBDOMAIN = { pattern: '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$' } as const;
// Comma-separated entries, none empty, and no `user:` or `group:` without a name: a stray comma must not pass
// for a deliberate list. Parsed by parseTrustedCreators in src/sources/kube/sandbox-runtimes.ts.
const TRUSTED_CREATOR = String.raw`\s*(?!(?:user|group):\s*(?:,|$))[^\s,][^,]*`;
const TRUSTED_CREATORS = { pattern: `^${TRUSTED_CREATOR}(?:,${TRUSTED_CREATOR})*$` } as const;
const MIB = 1024 * 1024;

/**
 * One row per option, ordered as `--help` prints them and ajv reports problems: `option(flag, kind, help,
 * schema, default)`. The env var is the flag's name under SANDBOX_INJECTOR_.
 */
export const OPTION_ROWS = {
  host: option('host', 'string', 'address to bind both listeners to', NON_EMPTY, '0.0.0.0'),
  port: option('port', 'integer', 'HTTPS webhook port (0 = pick a free port)', PORT, 8443),
  metricsPort: option('metrics-port', 'integer', 'plain-HTTP /metrics, /healthz, /readyz port (0 = disabled)', PORT, 9090),
  configFile: option('config-file', 'string', 'injection ConfigMap manifest (YAML or JSON), watched', NON_EMPTY, DEFAULT_CONFIG_FILE),
  tlsCertFile: option('tls-cert-file', 'string', 'serving certificate (PEM, may hold a chain), watched', NON_EMPTY),
  tlsKeyFile: option('tls-key-file', 'string', 'serving private key (PEM), watched', NON_EMPTY),
  tlsClientCaFile: option('tls-client-ca-file', 'string', 'require client certificates issued by this CA', NON_EMPTY),
  selfSignedDir: option('self-signed-dir', 'string', 'where a self-signed CA and cert are made when no cert is given', NON_EMPTY, 'certs'),
  logLevel: option('log-level', 'string', LOG_LEVELS.join('|'), { enum: LOG_LEVELS }, 'info'),
  shutdownDelaySeconds: option(
    'shutdown-delay-seconds',
    'integer',
    'keep serving this long after SIGTERM, not ready',
    { minimum: 0, maximum: 600 },
    0,
  ),
  shutdownTimeoutSeconds: option(
    'shutdown-timeout-seconds',
    'integer',
    'wait this long for in-flight reviews',
    { minimum: 1, maximum: 3600 },
    25,
  ),
  requestTimeoutSeconds: option(
    'request-timeout-seconds',
    'integer',
    'headers and body must arrive within this (408), and a stalled connection is closed after it',
    { minimum: 1, maximum: 3600 },
    DEFAULT_TRANSPORT_LIMITS.requestTimeoutMs / 1000,
  ),
  idleTimeoutSeconds: option(
    'idle-timeout-seconds',
    'integer',
    'close kept-alive connections idle this long',
    { minimum: 1, maximum: 3600 },
    DEFAULT_TRANSPORT_LIMITS.idleTimeoutMs / 1000,
  ),
  maxConnections: option(
    'max-connections',
    'integer',
    'at this many, a new connection first closes one arriving past the slow-client grace, else the longest idle; else it is closed',
    { minimum: 1, maximum: 1_000_000 },
    DEFAULT_TRANSPORT_LIMITS.maxConnections,
  ),
  slowClientGraceMilliseconds: option(
    'slow-client-grace-milliseconds',
    'integer',
    'a connection still arriving (handshake, headers, body) after this long may be closed for others at the connection cap or byte budget',
    { minimum: 0, maximum: 3_600_000 },
    DEFAULT_TRANSPORT_LIMITS.slowClientGraceMs,
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
  tlsMinVersion: option('tls-min-version', 'string', TLS_MIN_VERSIONS.join('|'), { enum: TLS_MIN_VERSIONS }, 'VersionTLS12'),
  tlsCipherSuites: option(
    'tls-cipher-suites',
    'string',
    'TLS 1.2 cipher suites, comma-separated IANA names (ECDHE with AEAD only)',
    NON_EMPTY,
    DEFAULT_TLS_CIPHER_SUITES.join(','),
  ),
  kubeconfig: option('kubeconfig', 'string', 'cluster mode with this kubeconfig (in a pod: the service account)', NON_EMPTY),
  configNamespace: option(
    'config-namespace',
    'string',
    'namespace of the injection ConfigMap (cluster mode)',
    DNS_LABEL,
    DEFAULT_CONFIG_NAMESPACE,
  ),
  configName: option('config-name', 'string', 'name of the injection ConfigMap (cluster mode)', DNS_SUBDOMAIN, DEFAULT_CONFIG_NAME),
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
    TRUSTED_CREATORS,
  ),
  wrapperImage: option('wrapper-image', 'string', 'image whose init container installs run_with_envs.sh', NON_EMPTY),
  agentRuntimeHasWrapper: option(
    'agent-runtime-has-wrapper',
    'boolean',
    'the agent-runtime image carries run_with_envs.sh: add no wrapper init container',
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
    'sandbox-system',
  ),
  certSecretName: option(
    'cert-secret-name',
    'string',
    'Secret holding the self-managed CA and certificate',
    DNS_SUBDOMAIN,
    'sandbox-injector-tls',
  ),
  serviceName: option('service-name', 'string', 'Service in front of the webhook (named by the certificate)', DNS_LABEL, 'sandbox-injector'),
  webhookConfigName: option(
    'webhook-config-name',
    'string',
    'MutatingWebhookConfiguration whose caBundle is kept in step',
    DNS_SUBDOMAIN,
    'sandbox-injector',
  ),
  certDir: option('cert-dir', 'string', 'where self-managed mode writes the serving pair', NON_EMPTY, 'certs/self-managed'),
  certExtraSans: option(
    'cert-extra-sans',
    'string',
    'extra DNS names/IPs for the self-managed certificate, comma-separated',
    NON_EMPTY,
  ),
  certPollSeconds: option(
    'cert-poll-seconds',
    'integer',
    "re-read the certificate Secret this often (another replica's renewal)",
    { minimum: 1, maximum: 86_400 },
    60,
  ),
};

type Rows = typeof OPTION_ROWS;
type OptionKey = keyof Rows;
type ValueOf<R> = R extends OptionRow<infer K, infer S> ? ValueType<K, S> : never;
type Defaulted<R> = R extends { readonly default: undefined } ? false : true;

/** A command's option rows: serve's are OPTION_ROWS; other long-running commands declare their own. */
export type OptionRows = Readonly<Record<string, OptionRow>>;

/**
 * What the flags and env say: an option with a default is always there, one without only when given. Typed
 * from the rows rather than written out, so a row without a default can never be read as always there.
 */
export type OptionValuesOf<R extends OptionRows> = {
  [K in keyof R as Defaulted<R[K]> extends true ? K : never]: ValueOf<R[K]>;
} & {
  [K in keyof R as Defaulted<R[K]> extends true ? never : K]?: ValueOf<R[K]>;
};
type OptionValues = OptionValuesOf<Rows>;

/** Local mode takes the injection config from a file and runtimes from pod annotations; cluster mode asks the API. */
type ServeMode = 'local' | 'cluster';

export interface ServeOptions extends OptionValues {
  /** Not an option of its own: decided from `--kubeconfig` and the pod's environment (see `serveMode`). */
  mode: ServeMode;
}

// ajv fills in the defaults (useDefaults), so every option with a default is required after it ran: the
// `required` list says the same as `OptionValues`, from the same rows.
function rowsSchema(rows: OptionRows): SchemaObject {
  const keys = Object.keys(rows);
  return {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(keys.map((key) => [key, propertySchema(rows[key] as OptionRow)])),
    required: keys.filter((key) => rows[key]?.default !== undefined),
  };
}

function propertySchema(row: OptionRow): SchemaObject {
  return { type: row.kind, ...row.schema, ...(row.default === undefined ? {} : { default: row.default }) };
}

// coerceTypes turns the strings of flags and env into integers and booleans.
const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true });
// Compiled once at module load.
const validate = ajv.compile<OptionValues>(rowsSchema(OPTION_ROWS));

export class OptionsError extends Error {
  override readonly name = 'OptionsError';
  readonly code = STARTUP_ERRORS.optionsInvalid.code;
  constructor(readonly problems: readonly string[]) {
    super(problems.join('; '));
  }
}

export type ParsedCommandLine = { kind: 'help' } | { kind: 'options'; options: Readonly<ServeOptions> };

/**
 * Flags win over environment variables, which win over defaults. An empty environment variable counts as
 * unset, because Kubernetes manifests often template `value: ""` for "not configured". `fileExists` is only
 * asked about the service-account token, and only inside a pod; tests pass their own.
 */
export function parseServeOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  fileExists: (path: string) => boolean = existsSync,
): ParsedCommandLine {
  const raw = readRows(OPTION_ROWS, argv, env);
  if (raw === 'help') return { kind: 'help' };
  if (!validate(raw)) throw new OptionsError((validate.errors ?? []).map((e) => describeSchemaError(OPTION_ROWS, e)));
  const problems = crossFieldProblems(raw);
  if (problems.length > 0) throw new OptionsError(problems);
  return { kind: 'options', options: Object.freeze({ ...raw, mode: serveMode(raw.kubeconfig, env, fileExists) }) };
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * A kubeconfig means cluster mode. Without one, only a pod with a service account can reach the API: kubelet
 * sets KUBERNETES_SERVICE_HOST in every container, but mounts the token only when the pod automounts it. The
 * variable is checked first so a local run never looks at the filesystem.
 */
function serveMode(kubeconfig: string | undefined, env: NodeJS.ProcessEnv, fileExists: (path: string) => boolean): ServeMode {
  if (kubeconfig !== undefined) return 'cluster';
  return env.KUBERNETES_SERVICE_HOST !== undefined && fileExists(SERVICE_ACCOUNT_TOKEN) ? 'cluster' : 'local';
}

/** The values the flags and env give, before validation; 'help' for `--help` or `-h`. */
function readRows(rows: OptionRows, argv: readonly string[], env: NodeJS.ProcessEnv): Record<string, unknown> | 'help' {
  const flags = readFlags(rows, argv);
  if (flags.help === true) return 'help';
  const raw: Record<string, unknown> = {};
  for (const [key, { flag, env: envName }] of Object.entries(rows)) {
    const fromFlag = flags[flag];
    const fromEnv = env[envName];
    if (fromFlag !== undefined) raw[key] = fromFlag;
    else if (fromEnv !== undefined && fromEnv !== '') raw[key] = fromEnv;
  }
  return raw;
}

/**
 * Another command's options from its own rows, the way serve's are read: flags win over env, which wins over
 * defaults; validated against the rows' schema, frozen. Throws OptionsError naming the flag and env var.
 */
export function parseCommandOptions<R extends OptionRows>(
  rows: R,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { kind: 'help' } | { kind: 'options'; options: Readonly<OptionValuesOf<R>> } {
  const raw = readRows(rows, argv, env);
  if (raw === 'help') return { kind: 'help' };
  const check = ajv.compile<OptionValuesOf<R>>(rowsSchema(rows));
  if (!check(raw)) throw new OptionsError((check.errors ?? []).map((e) => describeSchemaError(rows, e)));
  return { kind: 'options', options: Object.freeze(raw) };
}

function readFlags(rows: OptionRows, argv: readonly string[]): Record<string, string | boolean | undefined> {
  const parseOptions: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const { flag, kind } of Object.values(rows)) {
    parseOptions[flag] = { type: kind === 'boolean' ? 'boolean' : 'string' };
  }
  try {
    const { values } = parseArgs({ args: [...argv], options: parseOptions, strict: true, allowPositionals: false });
    return values;
  } catch (error) {
    throw new OptionsError([errorMessage(error)]);
  }
}

function crossFieldProblems(options: OptionValues): string[] {
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
  for (const problem of cipherSuiteProblems(splitCipherSuites(options.tlsCipherSuites), options.tlsMinVersion)) {
    problems.push(`${label('tlsCipherSuites')}: ${problem}`);
  }
  return problems;
}

function describeSchemaError(rows: OptionRows, error: ErrorObject): string {
  const key = error.instancePath.slice(1);
  const row = Object.hasOwn(rows, key) ? rows[key] : undefined;
  const where = row === undefined ? 'options' : rowLabel(row);
  const values = (error.params as { allowedValues?: unknown }).allowedValues;
  const allowed = error.keyword === 'enum' && Array.isArray(values) ? ` (${values.join(', ')})` : '';
  return `${where}: ${error.message ?? 'is invalid'}${allowed}`;
}

function label(key: OptionKey): string {
  return rowLabel(OPTION_ROWS[key]);
}

function rowLabel(row: OptionRow): string {
  return `--${row.flag} (${row.env})`;
}

/** How reviews inject, as the options say; the CLI's review and inject take the same choices as flags. */
export function injectionSettings(options: Readonly<ServeOptions>): {
  postStartConflict: PostStartConflict;
  wrapper?: WrapperInstaller;
} {
  const image = options.agentRuntimeHasWrapper ? undefined : options.wrapperImage;
  return { postStartConflict: options.postStartConflict, ...wrapperFromImage(image) };
}

/** The webhook port's limits, as the options say (seconds and bytes, here in the units Node takes). */
export function transportLimits(options: Readonly<ServeOptions>): TransportLimits {
  return {
    requestTimeoutMs: options.requestTimeoutSeconds * 1000,
    idleTimeoutMs: options.idleTimeoutSeconds * 1000,
    maxConnections: options.maxConnections,
    slowClientGraceMs: options.slowClientGraceMilliseconds,
    maxBodyBytes: options.maxBodyBytes,
    maxInflightBytes: options.maxInflightBytes,
    maxUnreadBytes: options.maxUnreadBytes,
  };
}

/** The TLS versions and suites, as the options say; the parser has already refused bad names. */
export function tlsPolicyOf(options: Readonly<ServeOptions>): TlsPolicy {
  return tlsPolicy(options.tlsMinVersion, splitCipherSuites(options.tlsCipherSuites));
}

/** `serve --help`: one line per option, generated from the same rows the parser uses. */
export function serveUsage(): string {
  return commandUsage('serve', OPTION_ROWS);
}

/** A command's `--help`: one line per option of its rows. */
export function commandUsage(command: string, options: OptionRows): string {
  const rows = Object.values(options);
  const width = Math.max(...rows.map((row) => row.flag.length)) + 4;
  const lines = rows.map(({ flag, env, help, default: fallback }) => {
    const shown = fallback === undefined ? '' : ` [default: ${typeof fallback === 'string' ? fallback : JSON.stringify(fallback)}]`;
    return `  ${`--${flag}`.padEnd(width)}${help}${shown}\n  ${' '.repeat(width)}env ${env}`;
  });
  return `usage: sandbox-injector ${command} [flags]\n\n${lines.join('\n')}\n  ${'-h, --help'.padEnd(width)}this text\n`;
}
