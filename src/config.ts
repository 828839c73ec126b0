/**
 * Process options: read from flags and environment in this one place, validated once against one schema,
 * frozen, and passed down. Nothing deeper in the code reads `process.env` or `process.argv`.
 *
 * Each option is one row of `OPTION_ROWS` (src/options/rows.ts). What the rows cannot say is decided here, once:
 * the checks across options, the serve mode, the trusted creators read from their list, and durations in
 * milliseconds.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Ajv, type ErrorObject, type SchemaObject } from 'ajv';
import type { PostStartConflict, WrapperInstaller } from './injection/index.js';
import type { OptionRow, ValueType } from './options/option-row.js';
import { OPTION_ROWS } from './options/rows.js';
import type { TransportLimits } from './server/transport.js';
import { cipherSuiteProblems, splitCipherSuites, tlsPolicy, type TlsPolicy } from './server/tls/policy.js';
import { STARTUP_ERRORS } from './errors.js';
import { readTrustedCreators, type TrustedCreators } from './sources/trusted-creators.js';
import { errorMessage } from './util/error-message.js';
import { wrapperFromImage } from './wrapper/installer.js';

export { DEFAULT_CONFIG_FILE, OPTION_ROWS } from './options/rows.js';

type Rows = typeof OPTION_ROWS;
type OptionKey = keyof Rows;
type ValueOf<R> = R extends OptionRow<infer K, infer S> ? ValueType<K, S> : never;
type Defaulted<R> = R extends { readonly default: undefined } ? false : true;

/**
 * What the flags and env say: an option with a default is always there, one without only when given. Typed
 * from the rows rather than written out, so a row without a default can never be read as always there.
 */
type OptionValues = {
  [K in OptionKey as Defaulted<Rows[K]> extends true ? K : never]: ValueOf<Rows[K]>;
} & {
  [K in OptionKey as Defaulted<Rows[K]> extends true ? never : K]?: ValueOf<Rows[K]>;
};

/** Local mode takes the injection config from a file and runtimes from pod annotations; cluster mode asks the API. */
type ServeMode = 'local' | 'cluster';

export interface ServeOptions extends OptionValues {
  /** Not an option of its own: decided from `--kubeconfig` and the pod's environment (see `serveMode`). */
  mode: ServeMode;
  /** `--trusted-creators` as read (src/sources/trusted-creators.ts); undefined when not given: everyone is trusted. */
  trusted: TrustedCreators | undefined;
}

// ajv fills in the defaults (useDefaults), so every option with a default is required after it ran: the
// `required` list says the same as `OptionValues`, from the same rows.
const SCHEMA: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(optionKeys().map((key) => [key, propertySchema(OPTION_ROWS[key])])),
  required: optionKeys().filter((key) => OPTION_ROWS[key].default !== undefined),
};

function propertySchema(row: OptionRow): SchemaObject {
  return { type: row.kind, ...row.schema, ...(row.default === undefined ? {} : { default: row.default }) };
}

// Compiled once at module load; coerceTypes turns the strings of flags and env into integers and booleans.
const validate = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true }).compile<OptionValues>(SCHEMA);

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
  const flags = readFlags(argv);
  if (flags.help === true) return { kind: 'help' };

  const raw: Record<string, unknown> = {};
  for (const key of optionKeys()) {
    const { flag, env: envName } = OPTION_ROWS[key];
    const fromFlag = flags[flag];
    const fromEnv = env[envName];
    if (fromFlag !== undefined) raw[key] = fromFlag;
    else if (fromEnv !== undefined && fromEnv !== '') raw[key] = fromEnv;
  }

  if (!validate(raw)) throw new OptionsError((validate.errors ?? []).map(describeSchemaError));
  const trusted = raw.trustedCreators === undefined ? undefined : readTrustedCreators(raw.trustedCreators);
  const mode = serveMode(raw.kubeconfig, env, fileExists);
  const problems = crossFieldProblems(raw);
  if (trusted?.ok === false) problems.push(`${label('trustedCreators')}: ${trusted.problem}`);
  if (raw.certMode === 'self-managed' && mode === 'local') {
    problems.push(`${label('certMode')} self-managed needs cluster mode: give ${label('kubeconfig')}, or run in a pod`);
  }
  if (problems.length > 0) throw new OptionsError(problems);
  return { kind: 'options', options: Object.freeze({ ...raw, mode, trusted: trusted?.ok === true ? trusted.creators : undefined }) };
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

function readFlags(argv: readonly string[]): Record<string, string | boolean | undefined> {
  const parseOptions: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const key of optionKeys()) {
    const { flag, kind } = OPTION_ROWS[key];
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

function describeSchemaError(error: ErrorObject): string {
  const key = error.instancePath.slice(1);
  const where = isOptionKey(key) ? label(key) : 'options';
  const values = (error.params as { allowedValues?: unknown }).allowedValues;
  const allowed = error.keyword === 'enum' && Array.isArray(values) ? ` (${values.join(', ')})` : '';
  return `${where}: ${error.message ?? 'is invalid'}${allowed}`;
}

function label(key: OptionKey): string {
  return `--${OPTION_ROWS[key].flag} (${OPTION_ROWS[key].env})`;
}

function isOptionKey(key: string): key is OptionKey {
  return Object.hasOwn(OPTION_ROWS, key);
}

function optionKeys(): OptionKey[] {
  return Object.keys(OPTION_ROWS).filter(isOptionKey);
}

/** How reviews inject, as the options say; the CLI's review and inject take the same choices as flags. */
export function injectionSettings(options: Readonly<ServeOptions>): {
  postStartConflict: PostStartConflict;
  wrapper?: WrapperInstaller;
} {
  const image = options.agentRuntimeHasWrapper ? undefined : options.wrapperImage;
  return { postStartConflict: options.postStartConflict, ...wrapperFromImage(image) };
}

const MS_PER_SECOND = 1000;

/** The options given in seconds, in the milliseconds timers take: the one place the units change. */
export function durationsMs(options: Readonly<ServeOptions>): {
  shutdownDelayMs: number;
  shutdownTimeoutMs: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
  certPollMs: number;
} {
  return {
    shutdownDelayMs: options.shutdownDelaySeconds * MS_PER_SECOND,
    shutdownTimeoutMs: options.shutdownTimeoutSeconds * MS_PER_SECOND,
    requestTimeoutMs: options.requestTimeoutSeconds * MS_PER_SECOND,
    idleTimeoutMs: options.idleTimeoutSeconds * MS_PER_SECOND,
    certPollMs: options.certPollSeconds * MS_PER_SECOND,
  };
}

/** The webhook port's limits, as the options say, in the units Node takes. */
export function transportLimits(options: Readonly<ServeOptions>): TransportLimits {
  const { requestTimeoutMs, idleTimeoutMs } = durationsMs(options);
  return {
    requestTimeoutMs,
    idleTimeoutMs,
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
  const width = Math.max(...optionKeys().map((key) => OPTION_ROWS[key].flag.length)) + 4;
  const rows = optionKeys().map((key) => {
    const { flag, env, help, default: fallback } = OPTION_ROWS[key];
    const shown = fallback === undefined ? '' : ` [default: ${String(fallback)}]`;
    return `  ${`--${flag}`.padEnd(width)}${help}${shown}\n  ${' '.repeat(width)}env ${env}`;
  });
  return `Usage: sandbox-injector serve [options]\n\n${rows.join('\n')}\n  ${'--help'.padEnd(width)}this text\n`;
}
