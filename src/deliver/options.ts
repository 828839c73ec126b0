/**
 * `deliver-env`'s options: one row each (flag, env var under SANDBOX_INJECTOR_, help, schema, default), read
 * by config.ts's parser exactly as serve's are. docs/deliver-env.md has a row for each (a test checks).
 */
import { option } from '../options/option-row.js';
import { commandUsage, parseCommandOptions, type OptionValuesOf } from '../options/read-rows.js';
import { DNS_LABEL, DNS_SUBDOMAIN, LOG_LEVELS, NON_EMPTY, PORT } from '../options/rows.js';
import { ENV_DIR } from '../wrapper/env-dir.js';

const ABSOLUTE_PATH = { pattern: '^/' } as const;
// NAMESPACE/NAME of a Secret: a DNS label, then a DNS subdomain.
const SECRET_REF = { pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$' } as const;
// A POSIX user name as envd looks it up: it owns the files written.
const USER_NAME = { pattern: '^[a-z_][a-z0-9_.-]{0,31}$' } as const;

export const DELIVER_OPTION_ROWS = {
  kubeconfig: option('kubeconfig', 'string', 'kubeconfig to use (in a pod: the service account)', NON_EMPTY),
  envDir: option(
    'env-dir',
    'string',
    'the env folder inside the pod, where run_with_envs.sh waits',
    ABSOLUTE_PATH,
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
  leaseNamespace: option('lease-namespace', 'string', 'namespace of that Lease', DNS_LABEL, 'sandbox-system'),
  leaseDurationSeconds: option(
    'lease-duration-seconds',
    'integer',
    'how long a Lease not renewed stays held',
    { minimum: 2, maximum: 300 },
    15,
  ),
  leaseRenewDeadlineSeconds: option(
    'lease-renew-deadline-seconds',
    'integer',
    'the leader stops delivering when it could not renew for this long',
    { minimum: 1, maximum: 300 },
    10,
  ),
  leaseRetrySeconds: option(
    'lease-retry-seconds',
    'integer',
    'how often the Lease is read and renewed',
    { minimum: 1, maximum: 60 },
    2,
  ),
  identity: option(
    'identity',
    'string',
    "this replica's name in the Lease [default: the host name and a random UUID]",
    NON_EMPTY,
  ),
  requestTimeoutMs: option(
    'request-timeout-ms',
    'integer',
    'one envd request, answer included, must end within this',
    { minimum: 100, maximum: 600_000 },
    5000,
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
    'backoff-min-ms',
    'integer',
    'first retry after a transport error or 5xx (doubling, jittered)',
    { minimum: 10, maximum: 600_000 },
    500,
  ),
  backoffMaxMs: option(
    'backoff-max-ms',
    'integer',
    'longest wait between retries',
    { minimum: 10, maximum: 3_600_000 },
    60_000,
  ),
  logLevel: option('log-level', 'string', LOG_LEVELS.join('|'), { enum: LOG_LEVELS }, 'info'),
};

export type DeliverOptions = OptionValuesOf<typeof DELIVER_OPTION_ROWS>;

export function parseDeliverOptions(argv: readonly string[], env: NodeJS.ProcessEnv) {
  return parseCommandOptions(DELIVER_OPTION_ROWS, argv, env);
}

export function deliverUsage(): string {
  return commandUsage(
    'deliver-env',
    DELIVER_OPTION_ROWS,
    `Writes each claimed Sandbox's env.sh and .env_ready into its pod through envd's file API, for
EnvVarsInjectionPolicy Auto; clears them when the claim ends. One replica writes, elected by a Lease
(docs/deliver-env.md).`,
  );
}

/** What one row alone cannot check. */
export function deliverOptionProblems(options: Readonly<DeliverOptions>): string[] {
  const problems: string[] = [];
  const label = (row: { flag: string; env: string }) => `--${row.flag} (${row.env})`;
  if (options.backoffMinMs > options.backoffMaxMs) {
    problems.push(
      `${label(DELIVER_OPTION_ROWS.backoffMinMs)} must not exceed ${label(DELIVER_OPTION_ROWS.backoffMaxMs)}`,
    );
  }
  if (options.leaseRenewDeadlineSeconds >= options.leaseDurationSeconds) {
    problems.push(
      `${label(DELIVER_OPTION_ROWS.leaseRenewDeadlineSeconds)} must be below ${label(DELIVER_OPTION_ROWS.leaseDurationSeconds)}`,
    );
  }
  if (options.leaseRetrySeconds >= options.leaseRenewDeadlineSeconds) {
    problems.push(
      `${label(DELIVER_OPTION_ROWS.leaseRetrySeconds)} must be below ${label(DELIVER_OPTION_ROWS.leaseRenewDeadlineSeconds)}`,
    );
  }
  return problems;
}
