/**
 * Process options: read from flags and environment in this one place, validated once against one schema,
 * frozen, and passed down. Nothing deeper in the code reads `process.env` or `process.argv`.
 *
 * Each option is one row of `OPTION_ROWS` (src/options/rows.ts). What the rows cannot say is decided here, once:
 * the checks across options, the serve mode, the trusted creators read from their list, and durations in
 * milliseconds.
 */
import { existsSync } from 'node:fs';
import type { PostStartConflict, WrapperInstaller } from './injection/index.js';
import {
  commandUsage,
  compileRows,
  describeSchemaError,
  OptionsError,
  readRows,
  rowLabel,
  type OptionValuesOf,
} from './options/read-rows.js';
import { OPTION_ROWS } from './options/rows.js';
import type { TransportLimits } from './server/transport.js';
import { cipherSuiteProblems, splitCipherSuites, tlsPolicy, type TlsPolicy } from './server/tls/policy.js';
import { readTrustedCreators, type TrustedCreators } from './sources/trusted-creators.js';
import { wrapperFromImage } from './wrapper/installer.js';

export { DEFAULT_CONFIG_FILE, OPTION_ROWS } from './options/rows.js';
export { OptionsError } from './options/read-rows.js';

type OptionKey = keyof typeof OPTION_ROWS;
type OptionValues = OptionValuesOf<typeof OPTION_ROWS>;

/** Local mode takes the injection config from a file and runtimes from pod annotations; cluster mode asks the API. */
type ServeMode = 'local' | 'cluster';

export interface ServeOptions extends OptionValues {
  /** Not an option of its own: decided from `--kubeconfig` and the pod's environment (see `serveMode`). */
  mode: ServeMode;
  /** `--trusted-creators` as read (src/sources/trusted-creators.ts); undefined when not given: everyone is trusted. */
  trusted: TrustedCreators | undefined;
}

// Compiled once at module load.
const validate = compileRows(OPTION_ROWS);

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
  const trusted = raw.trustedCreators === undefined ? undefined : readTrustedCreators(raw.trustedCreators);
  const mode = serveMode(raw.kubeconfig, env, fileExists);
  const problems = crossFieldProblems(raw);
  if (trusted?.ok === false) problems.push(`${label('trustedCreators')}: ${trusted.problem}`);
  if (raw.certMode === 'self-managed' && mode === 'local') {
    problems.push(`${label('certMode')} self-managed needs cluster mode: give ${label('kubeconfig')}, or run in a pod`);
  }
  if (problems.length > 0) throw new OptionsError(problems);
  return {
    kind: 'options',
    options: Object.freeze({ ...raw, mode, trusted: trusted?.ok === true ? trusted.creators : undefined }),
  };
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/**
 * A kubeconfig means cluster mode. Without one, only a pod with a service account can reach the API: kubelet
 * sets KUBERNETES_SERVICE_HOST in every container, but mounts the token only when the pod automounts it. The
 * variable is checked first so a local run never looks at the filesystem.
 */
function serveMode(
  kubeconfig: string | undefined,
  env: NodeJS.ProcessEnv,
  fileExists: (path: string) => boolean,
): ServeMode {
  if (kubeconfig !== undefined) return 'cluster';
  return env.KUBERNETES_SERVICE_HOST !== undefined && fileExists(SERVICE_ACCOUNT_TOKEN) ? 'cluster' : 'local';
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

function label(key: OptionKey): string {
  return rowLabel(OPTION_ROWS[key]);
}

/** How reviews inject, as the options say; the CLI's review and inject take the same choices as flags. */
export function injectionSettings(options: Readonly<ServeOptions>): {
  postStartConflict: PostStartConflict;
  wrapper?: WrapperInstaller;
  warnUnwrapped: boolean;
} {
  const image = options.agentRuntimeHasWrapper ? undefined : options.wrapperImage;
  return {
    postStartConflict: options.postStartConflict,
    warnUnwrapped: options.warnUnwrapped,
    ...wrapperFromImage(image),
  };
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
  return commandUsage('serve', OPTION_ROWS);
}
