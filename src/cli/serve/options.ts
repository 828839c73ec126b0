/**
 * serve's options: read from flags and environment in this one place by the rows beside it (option-rows.ts),
 * validated once, frozen, and passed down. Nothing deeper in the code reads `process.env` or `process.argv`.
 *
 * What the rows cannot say is decided here, once: the checks across options, the serve mode, and the trusted
 * creators read from their list; and what the parts take is derived from the options here.
 */
import { existsSync } from 'node:fs';
import type { PostStartConflict, WrapperInstaller } from '../../injection/index.js';
import {
  acceptedUnless,
  commandUsage,
  readOptions,
  rowLabel,
  type OptionValuesOf,
  type ParsedOptions,
} from '../../options/read-rows.js';
import type { TransportLimits } from '../../server/transport.js';
import { cipherSuiteProblems, splitCipherSuites, tlsPolicy, type TlsPolicy } from '../../server/tls/policy.js';
import { hasInClusterCredentials } from '../../kube-client/in-cluster.js';
import { readTrustedCreators, type TrustedCreators } from '../../sandbox/trusted-creators.js';
import { wrapperFromImage } from '../wrapper-installer.js';
import { SERVE_OPTION_ROWS } from './option-rows.js';

export { DEFAULT_CONFIG_FILE, SERVE_OPTION_ROWS } from './option-rows.js';

type OptionKey = keyof typeof SERVE_OPTION_ROWS;
type OptionValues = OptionValuesOf<typeof SERVE_OPTION_ROWS>;

/** Local mode takes the injection config from a file and runtimes from pod annotations; cluster mode asks the API. */
type ServeMode = 'local' | 'cluster';

export interface ServeOptions extends OptionValues {
  /** Not an option of its own: decided from `--kubeconfig` and the pod's environment (see `serveMode`). */
  mode: ServeMode;
  /** `--trusted-creators` as read (src/sandbox/trusted-creators.ts); undefined when not given: everyone is trusted. */
  trusted: TrustedCreators | undefined;
}

/**
 * Flags win over environment variables, which win over defaults. An empty environment variable counts as
 * unset, because Kubernetes manifests often template `value: ""` for "not configured". `fileExists` is only
 * asked about the service-account token, and only inside a pod; tests pass their own.
 */
export function parseServeOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  fileExists: (path: string) => boolean = existsSync,
): ParsedOptions<ServeOptions> {
  const read = readOptions(SERVE_OPTION_ROWS, argv, env);
  if (read.kind !== 'options') return read;
  const raw = read.options;
  const trusted = raw.trustedCreators === undefined ? undefined : readTrustedCreators(raw.trustedCreators);
  const mode = serveMode(raw.kubeconfig, env, fileExists);
  const problems = crossFieldProblems(raw);
  if (trusted?.ok === false) problems.push(`${label('trustedCreators')}: ${trusted.problem}`);
  if (raw.certMode === 'self-managed' && mode === 'local') {
    problems.push(`${label('certMode')} self-managed needs cluster mode: give ${label('kubeconfig')}, or run in a pod`);
  }
  return acceptedUnless({ ...raw, mode, trusted: trusted?.ok === true ? trusted.creators : undefined }, problems);
}

/** A kubeconfig means cluster mode; without one, only a pod with a service account can reach the API. */
function serveMode(
  kubeconfig: string | undefined,
  env: NodeJS.ProcessEnv,
  fileExists: (path: string) => boolean,
): ServeMode {
  if (kubeconfig !== undefined) return 'cluster';
  return hasInClusterCredentials(env, fileExists) ? 'cluster' : 'local';
}

function crossFieldProblems(options: Readonly<OptionValues>): string[] {
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
  return rowLabel(SERVE_OPTION_ROWS[key]);
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

/** The webhook port's limits, as the options say. */
export function transportLimits(options: Readonly<ServeOptions>): TransportLimits {
  return {
    requestTimeoutMs: options.requestTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs,
    maxConnections: options.maxConnections,
    slowClientGraceMs: options.slowClientGraceMs,
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
  return commandUsage('serve', SERVE_OPTION_ROWS);
}
