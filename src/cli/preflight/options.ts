/**
 * `preflight`'s options: one row each (flag, env var under SANDBOX_INJECTOR_, help, schema, default), read by
 * the one row reader (src/options/read-rows.ts). The names of the objects default to what serve and deliver-env
 * default to, read from their rows, so the three never disagree. docs/cli.md has a row for each (a test checks).
 */
import { DNS_LABEL, DNS_SUBDOMAIN, NON_EMPTY, option, withShort } from '../../options/option-row.js';
import {
  acceptedUnless,
  commandUsage,
  readOptions,
  rowLabel,
  type OptionValuesOf,
  type ParsedOptions,
} from '../../options/read-rows.js';
import { readTrustedCreators } from '../../sandbox/trusted-creators.js';
import { DELIVER_OPTION_ROWS } from '../deliver-env/options.js';
import { SERVE_OPTION_ROWS } from '../serve/option-rows.js';

const OUTPUTS = ['text', 'json'] as const;

export const PREFLIGHT_OPTION_ROWS = {
  kubeconfig: option('kubeconfig', 'string', 'the cluster to check (required)', NON_EMPTY),
  output: withShort(option('output', 'string', OUTPUTS.join('|'), { enum: OUTPUTS }, 'text'), 'o'),
  beforeInstall: option(
    'before-install',
    'boolean',
    'leave out the checks of the installed webhook and deliver-env',
    {},
    false,
  ),
  configNamespace: option(
    'config-namespace',
    'string',
    'namespace of the injection ConfigMap',
    DNS_LABEL,
    SERVE_OPTION_ROWS.configNamespace.default,
  ),
  configName: option(
    'config-name',
    'string',
    'name of the injection ConfigMap',
    DNS_SUBDOMAIN,
    SERVE_OPTION_ROWS.configName.default,
  ),
  controllerNamespace: option(
    'controller-namespace',
    'string',
    "namespace of upstream's controller Deployment",
    DNS_LABEL,
    'sandbox-system',
  ),
  controllerDeployment: option(
    'controller-deployment',
    'string',
    "upstream's controller Deployment, whose service account creates Sandbox pods",
    DNS_SUBDOMAIN,
    'sandbox-controller-manager',
  ),
  trustedCreators: option(
    'trusted-creators',
    'string',
    "the list serve is given, as serve takes it [default: read from the webhook Deployment's args]",
    // Read by src/sandbox/trusted-creators.ts, as serve reads it.
    NON_EMPTY,
  ),
  webhookConfigName: option(
    'webhook-config-name',
    'string',
    'our MutatingWebhookConfiguration',
    DNS_SUBDOMAIN,
    SERVE_OPTION_ROWS.webhookConfigName.default,
  ),
  injectorNamespace: option(
    'injector-namespace',
    'string',
    "namespace of our webhook Deployment [default: that of the webhook configuration's Service]",
    DNS_LABEL,
  ),
  injectorDeployment: option(
    'injector-deployment',
    'string',
    'our webhook Deployment, whose serve args give the trusted creators and wrapper image',
    DNS_SUBDOMAIN,
    'sandbox-injector',
  ),
  auto: option('auto', 'boolean', 'check deliver-env even when no Sandbox uses Auto yet', {}, false),
  leaseNamespace: option(
    'lease-namespace',
    'string',
    "namespace of deliver-env's Lease",
    DNS_LABEL,
    DELIVER_OPTION_ROWS.leaseNamespace.default,
  ),
  leaseName: option(
    'lease-name',
    'string',
    "deliver-env's Lease",
    DNS_SUBDOMAIN,
    DELIVER_OPTION_ROWS.leaseName.default,
  ),
  image: option(
    'image',
    'string',
    "the wrapper image Sandbox pods pull [default: the webhook Deployment's]",
    NON_EMPTY,
  ),
};

export type PreflightOptions = OptionValuesOf<typeof PREFLIGHT_OPTION_ROWS> & { kubeconfig: string };

/** The options, or every problem with them: the rows' own, a missing --kubeconfig, a bad list. */
export function parsePreflightOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): ParsedOptions<PreflightOptions> {
  const read = readOptions(PREFLIGHT_OPTION_ROWS, argv, env);
  if (read.kind !== 'options') return read;
  const { kubeconfig, trustedCreators } = read.options;
  const problems: string[] = [];
  if (kubeconfig === undefined) problems.push(`${label('kubeconfig')} is required`);
  const trusted = trustedCreators === undefined ? undefined : readTrustedCreators(trustedCreators);
  if (trusted?.ok === false) problems.push(`${label('trustedCreators')}: ${trusted.problem}`);
  return acceptedUnless({ ...read.options, kubeconfig: kubeconfig ?? '' }, problems);
}

export function preflightUsage(): string {
  return commandUsage(
    'preflight',
    PREFLIGHT_OPTION_ROWS,
    `Checks a cluster before and after install, one line per check with what to do when it fails: the
Kubernetes version, the Sandbox CRD, the injection ConfigMap, the trusted creators against upstream's
controller, our webhook configuration and its endpoints, deliver-env's Lease when Auto is in use, and the
injector's image. Exits 0 when every check passes, 1 when one fails (docs/cli.md).`,
  );
}

function label(key: keyof typeof PREFLIGHT_OPTION_ROWS): string {
  return rowLabel(PREFLIGHT_OPTION_ROWS[key]);
}
