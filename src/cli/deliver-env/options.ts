/**
 * `deliver-env`'s options: one row each (flag, env var under SANDBOX_INJECTOR_, help, schema, default), read
 * by the one row reader (src/options/read-rows.ts) as serve's are, and the checks across them. Durations are
 * read into milliseconds, hence the keys' `Ms`. docs/deliver-env.md has a row for each (a test checks).
 */
import { existsSync } from 'node:fs';
import {
  DNS_LABEL,
  DNS_SUBDOMAIN,
  LOG_LEVELS,
  NON_EMPTY,
  option,
  PORT,
  withFormerFlags,
} from '../../options/option-row.js';
import {
  acceptedUnless,
  commandUsage,
  readOptions,
  rowLabel,
  type OptionValuesOf,
  type ParsedOptions,
} from '../../options/read-rows.js';
import type { PerPoolBound, ReplaceableState, ReplacementSettings } from '../../deliver/pools/pool-replacement.js';
import { DEFAULT_CONFIG_NAME, DEFAULT_CONFIG_NAMESPACE } from '../../config/injection-config.js';
import { hasInClusterCredentials } from '../../kube-client/in-cluster.js';
import { RECYCLED_POD_MODES } from '../../deliver/controller/recycle.js';
import { ENV_DIR } from '../../wrapper/env-dir.js';

// An absolute path of printable ASCII but for `"` and `\`: every upload names its files' paths in multipart
// file names (envd-files.ts), which carry those two only escaped, differently by each reader.
const ENV_FOLDER = { pattern: '^/[ !#-\\[\\]-~]*$' } as const;
// NAMESPACE/NAME of a Secret: a DNS label, then a DNS subdomain.
const SECRET_REF = { pattern: `${DNS_LABEL.pattern.slice(0, -1)}/${DNS_SUBDOMAIN.pattern.slice(1)}` } as const;
// A POSIX user name as envd looks it up: it owns the files written.
const USER_NAME = { pattern: '^[a-z_][a-z0-9_.-]{0,31}$' } as const;
// The states to replace: one of them, or both in either order.
const REPLACE_STATES = { pattern: '^(missing|stale)(,(missing|stale))?$' } as const;
// A count from 1, or a share of the pool from 1% to 100%, as a Deployment's maxUnavailable is written.
const PER_POOL = { pattern: '^([1-9][0-9]{0,5}|([1-9][0-9]?|100)%)$' } as const;

const ROWS = {
  kubeconfig: option('kubeconfig', 'string', 'kubeconfig to use (in a pod: the service account)', NON_EMPTY),
  envDir: option(
    'env-dir',
    'string',
    'the env folder inside the pod, where run_with_envs.sh waits',
    ENV_FOLDER,
    ENV_DIR,
  ),
  fileUser: option('file-user', 'string', 'user envd writes env.sh and .env_ready as (their owner)', USER_NAME, 'root'),
  runtimePort: option(
    'runtime-port',
    'integer',
    "envd's port when only the Sandbox's pod IP is known",
    { minimum: 1, maximum: 65535 },
    49983,
  ),
  trustRuntimeUrl: option(
    'trust-runtime-url',
    'boolean',
    "follow runtime URL annotations whose host is not the pod's IP (anyone who can update a Sandbox can then aim its variables anywhere)",
    {},
    false,
  ),
  runtimeTlsSecret: option(
    'runtime-tls-secret',
    'string',
    'NAMESPACE/NAME of the Secret (ca.crt, optional client.crt and client.key) for runtimes that serve TLS',
    SECRET_REF,
  ),
  requireRuntimeTls: option(
    'require-runtime-tls',
    'boolean',
    'refuse runtimes that serve plain HTTP, with a Warning [default: on when --runtime-tls-secret is set]',
    {},
  ),
  recycledPods: option(
    'recycled-pods',
    'string',
    `${RECYCLED_POD_MODES.join('|')}: when a pod that served an earlier claim takes the next (restart: once its wrapped containers restarted; recreate: never; any: at once, your recycler restarts the sandbox)`,
    { enum: RECYCLED_POD_MODES },
    'restart',
  ),
  allowHostNetwork: option(
    'allow-host-network',
    'boolean',
    "deliver to hostNetwork pods, whose IP is their node's: any process listening on the runtime's port there gets the claim (single-node test setups only)",
    {},
    false,
  ),
  configNamespace: option(
    'config-namespace',
    'string',
    "namespace of the injection ConfigMap, which pool pods are judged against (as serve's)",
    DNS_LABEL,
    DEFAULT_CONFIG_NAMESPACE,
  ),
  configName: option(
    'config-name',
    'string',
    "name of the injection ConfigMap (as serve's)",
    DNS_SUBDOMAIN,
    DEFAULT_CONFIG_NAME,
  ),
  replacePoolPods: option(
    'replace-pool-pods',
    'string',
    'delete unclaimed pool pods in these states (missing, stale, or missing,stale) so that their pool recreates them [default: none]',
    REPLACE_STATES,
  ),
  replaceMaxAtOnce: option(
    'replace-max-at-once',
    'integer',
    'pool pod replacements in flight at most, across the cluster',
    { minimum: 1, maximum: 1000 },
    5,
  ),
  replaceMaxPerPool: option(
    'replace-max-per-pool',
    'string',
    "pool pod replacements in flight at most in one pool: a count, or a share of the pool's pods (at least 1)",
    PER_POOL,
    '20%',
  ),
  replaceReadyTimeoutMs: option(
    'replace-ready-timeout',
    'duration',
    "how long a replacement waits for the pool's next pod to be Ready before the next one may start",
    { min: '10s', max: '1h' },
    '5m',
  ),
  host: option('host', 'string', 'address of the /metrics, /healthz, /readyz listener', NON_EMPTY, '0.0.0.0'),
  metricsPort: option(
    'metrics-port',
    'integer',
    'plain-HTTP /metrics, /healthz, /readyz port (0 = pick a free port)',
    PORT,
    9090,
  ),
  leaseName: option(
    'lease-name',
    'string',
    'Lease that elects the one replica that delivers',
    DNS_SUBDOMAIN,
    'sandbox-injector-deliver-env',
  ),
  leaseNamespace: option('lease-namespace', 'string', 'namespace of that Lease', DNS_LABEL, 'sandbox-injector-system'),
  // The Lease records its duration in whole seconds.
  leaseDurationMs: option(
    'lease-duration',
    'duration',
    'how long a Lease not renewed stays held',
    { min: '2s', max: '5m', step: '1s' },
    '15s',
  ),
  leaseRenewDeadlineMs: option(
    'lease-renew-deadline',
    'duration',
    'the leader stops delivering when it could not renew for this long',
    { min: '1s', max: '5m' },
    '10s',
  ),
  leaseRetryMs: option(
    'lease-retry',
    'duration',
    'how often the Lease is read and renewed',
    { min: '1s', max: '1m' },
    '2s',
  ),
  identity: option(
    'identity',
    'string',
    "this replica's name in the Lease [default: the host name and a random UUID]",
    NON_EMPTY,
  ),
  requestTimeoutMs: option(
    'request-timeout',
    'duration',
    'one envd request, answer included, must end within this',
    { min: '100ms', max: '10m' },
    '5s',
  ),
  maxAnswerBytes: option(
    'max-answer-bytes',
    'integer',
    'the most of an envd answer that is read',
    { minimum: 1024, maximum: 16 * 1024 * 1024 },
    65_536,
  ),
  concurrency: option(
    'concurrency',
    'integer',
    'Sandboxes delivered to at once (retries hold at most half of these)',
    { minimum: 1, maximum: 1024 },
    32,
  ),
  backoffMinMs: option(
    'backoff-min',
    'duration',
    'first retry after a transport error or 5xx (doubling, jittered)',
    { min: '10ms', max: '10m' },
    '500ms',
  ),
  backoffMaxMs: option('backoff-max', 'duration', 'longest wait between retries', { min: '10ms', max: '1h' }, '1m'),
  logLevel: option('log-level', 'string', LOG_LEVELS.join('|'), { enum: LOG_LEVELS }, 'info'),
};

/** Last, the flags that durations replaced (docs/cli.md, "Durations"). */
export const DELIVER_OPTION_ROWS = withFormerFlags(ROWS, {
  leaseDurationMs: ['lease-duration-seconds', 's'],
  leaseRenewDeadlineMs: ['lease-renew-deadline-seconds', 's'],
  leaseRetryMs: ['lease-retry-seconds', 's'],
  requestTimeoutMs: ['request-timeout-ms', 'ms'],
  backoffMinMs: ['backoff-min-ms', 'ms'],
  backoffMaxMs: ['backoff-max-ms', 'ms'],
});

export type DeliverOptions = OptionValuesOf<typeof DELIVER_OPTION_ROWS>;

/**
 * The options, or every problem with them: the rows' own, then those across them. `fileExists` is only asked
 * about the service-account token, and only inside a pod; tests pass their own.
 */
export function parseDeliverOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  fileExists: (path: string) => boolean = existsSync,
): ParsedOptions<DeliverOptions> {
  const read = readOptions(DELIVER_OPTION_ROWS, argv, env);
  if (read.kind !== 'options') return read;
  const problems = crossFieldProblems(read.options);
  if (read.options.kubeconfig === undefined && !hasInClusterCredentials(env, fileExists)) {
    problems.push(`needs ${label('kubeconfig')} outside a pod (or in one without a service-account token)`);
  }
  return acceptedUnless(read.options, problems);
}

export function deliverUsage(): string {
  return commandUsage(
    'deliver-env',
    DELIVER_OPTION_ROWS,
    `Writes each claimed Sandbox's env.sh and .env_ready into its pod through envd's file API, for
EnvVarsInjectionPolicy Auto; clears them when the claim ends. Reports unclaimed pool pods missing their
runtimes or made from an older injection config, and with --replace-pool-pods replaces them. One replica
writes, elected by a Lease (docs/deliver-env.md).`,
  );
}

/** Whether plain HTTP runtimes are refused: as the flag says, else as soon as a TLS bundle is configured. */
export function requiresRuntimeTls(options: Pick<DeliverOptions, 'requireRuntimeTls' | 'runtimeTlsSecret'>): boolean {
  return options.requireRuntimeTls ?? options.runtimeTlsSecret !== undefined;
}

/** The replacement's settings, or undefined when --replace-pool-pods is not set (the default). */
export function replacementSettings(
  options: Pick<DeliverOptions, 'replacePoolPods' | 'replaceMaxAtOnce' | 'replaceMaxPerPool' | 'replaceReadyTimeoutMs'>,
): ReplacementSettings | undefined {
  if (options.replacePoolPods === undefined) return undefined;
  const perPool = options.replaceMaxPerPool;
  const maxPerPool: PerPoolBound = perPool.endsWith('%')
    ? { kind: 'percent', percent: Number(perPool.slice(0, -1)) }
    : { kind: 'count', count: Number(perPool) };
  return {
    states: new Set(options.replacePoolPods.split(',') as ReplaceableState[]),
    maxAtOnce: options.replaceMaxAtOnce,
    maxPerPool,
    readyTimeoutMs: options.replaceReadyTimeoutMs,
  };
}

/** What one row alone cannot check. */
function crossFieldProblems(options: Readonly<DeliverOptions>): string[] {
  const problems: string[] = [];
  if (options.backoffMinMs > options.backoffMaxMs) {
    problems.push(`${label('backoffMinMs')} must not exceed ${label('backoffMaxMs')}`);
  }
  if (options.leaseRenewDeadlineMs >= options.leaseDurationMs) {
    problems.push(`${label('leaseRenewDeadlineMs')} must be below ${label('leaseDurationMs')}`);
  }
  if (options.leaseRetryMs >= options.leaseRenewDeadlineMs) {
    problems.push(`${label('leaseRetryMs')} must be below ${label('leaseRenewDeadlineMs')}`);
  }
  return problems;
}

function label(key: keyof typeof DELIVER_OPTION_ROWS): string {
  return rowLabel(DELIVER_OPTION_ROWS[key]);
}
