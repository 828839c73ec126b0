import { parseArgs } from 'node:util';
import type { ReviewDeps } from '../admission/review.js';
import { wrapperFromImage } from './wrapper-installer.js';
import { columns, UsageError } from './command.js';
import { type CliIo, readInput, writeLine } from './io.js';
import { CONFIG_FILE_HELP, offlineDeps, POSTSTART_CONFLICT_FLAG, POSTSTART_CONFLICT_HELP } from './offline-deps.js';
import { parsePod } from './pod-review.js';
import { explainPod, type Explanation } from './explain/explanation.js';
import { renderText } from './explain/render.js';
import { explainDelivery } from './explain/delivery.js';
import { DELIVERY_FLAG_NAMES, deliverySettings } from './explain/delivery-settings.js';
import type { DeliverySandbox } from '../deliver/controller/claim.js';
import { systemClock } from '../time/clock.js';

/** The name manifests/base/mutatingwebhookconfiguration.yaml installs (a test keeps the two equal). */
export const DEFAULT_WEBHOOK_CONFIGURATION = 'sandbox-injector';

export const usage = `usage: sandbox-injector explain --kubeconfig FILE (--sandbox NS/NAME | --pod NS/NAME | -f POD) [flags]
       sandbox-injector explain -f POD [--config-file CONFIGMAP]... [flags]

Says why a pod did or did not get its runtimes: whether the webhook configuration selects it, where its runtimes
and policy come from, the config keys, each runtime's fate and the patch, from the webhook's own review path.
Offline (no --kubeconfig) it reads a pod manifest, runtimes and policy from its annotations. Exits 0 whenever it
could explain, a denial included (docs/explain.md).

${columns([
  ['--kubeconfig FILE', 'read the pod, its Sandbox, the webhook configuration and the ConfigMap from this cluster'],
  ['--sandbox NS/NAME', "a Sandbox's pod, or the pod its controller would create (needs --kubeconfig)"],
  ['--pod NS/NAME', 'a stored pod (needs --kubeconfig)'],
  ['-f, --filename POD', 'a Pod manifest, YAML or JSON (- for standard input)'],
  [`${CONFIG_FILE_HELP[0]}...`, `offline: ${CONFIG_FILE_HELP[1]}; several are successive versions, oldest first`],
  [
    '--webhook-configuration NAME',
    `the MutatingWebhookConfiguration to judge (default ${DEFAULT_WEBHOOK_CONFIGURATION})`,
  ],
  ['--config-namespace NS', 'namespace of the injection ConfigMap (cluster; default as serve)'],
  ['--config-name NAME', 'name of the injection ConfigMap (cluster; default as serve)'],
  ['--allow-annotation-runtimes', 'as serve: honour runtime annotations on pods without a Sandbox owner'],
  ['--wrapper-image IMAGE', "as serve: the wrapper init container's image"],
  POSTSTART_CONFLICT_HELP,
  ['-o, --output text|json', 'the output format (default text)'],
])}

With --sandbox in a cluster it also says what deliver-env does with the Sandbox: whether it is claimed, which
pod the claim goes to and why, deliver-env's last Event, whether the env is delivered, and what to do next.
deliver-env's decision depends on its flags: give the ones it runs with (defaults as deliver-env's).

${columns([
  ['--runtime-port PORT', "as deliver-env: envd's port when only the pod's IP is known"],
  ['--[no-]trust-runtime-url', "as deliver-env: follow runtime URLs whose host is not the pod's IP"],
  ['--[no-]allow-host-network', 'as deliver-env: deliver to hostNetwork pods'],
  ['--[no-]require-runtime-tls', 'as deliver-env: refuse runtimes that serve plain HTTP'],
  ['--runtime-tls-secret NS/NAME', "as deliver-env: the runtimes' TLS bundle (explain reads the Secret)"],
  ['--recycled-pods MODE', 'as deliver-env: restart, recreate or any'],
  ['--lease-namespace NS', "namespace of deliver-env's Lease (default as deliver-env)"],
  ['--lease-name NAME', "deliver-env's Lease (default as deliver-env)"],
])}`;

const FLAGS = {
  kubeconfig: { type: 'string' },
  sandbox: { type: 'string' },
  pod: { type: 'string' },
  filename: { type: 'string', short: 'f' },
  'config-file': { type: 'string', multiple: true },
  'webhook-configuration': { type: 'string', default: DEFAULT_WEBHOOK_CONFIGURATION },
  'config-namespace': { type: 'string' },
  'config-name': { type: 'string' },
  'allow-annotation-runtimes': { type: 'boolean', default: false },
  'wrapper-image': { type: 'string' },
  output: { type: 'string', short: 'o', default: 'text' },
  ...POSTSTART_CONFLICT_FLAG,
  'runtime-port': { type: 'string' },
  'trust-runtime-url': { type: 'boolean' },
  'allow-host-network': { type: 'boolean' },
  'require-runtime-tls': { type: 'boolean' },
  'runtime-tls-secret': { type: 'string' },
  'recycled-pods': { type: 'string' },
  'lease-namespace': { type: 'string' },
  'lease-name': { type: 'string' },
} as const;

export type ExplainFlags = ReturnType<typeof parseFlags>;

function parseFlags(argv: string[]) {
  return parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false, allowNegative: true }).values;
}

/**
 * Answers "why did (or didn't) this pod get its runtime?": the webhook's selectors, where runtimes and policy
 * came from, the config keys, each runtime's fate and the patch, all from the server's own review path.
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const flags = parseFlags(argv);
  if (flags.output !== 'text' && flags.output !== 'json')
    throw new UsageError(`--output: "${flags.output}" is not one of text, json`);
  const targets = [flags.sandbox, flags.pod, flags.filename].filter((target) => target !== undefined);
  if (targets.length !== 1) throw new UsageError('give exactly one of --sandbox, --pod, -f');
  const explanation =
    flags.kubeconfig === undefined
      ? await explainOffline(flags, io)
      : await explainInCluster(flags.kubeconfig, flags, io);
  writeLine(io.stdout, flags.output === 'json' ? JSON.stringify(explanation, null, 2) : renderText(explanation));
  return 0;
}

async function explainOffline(flags: ExplainFlags, io: CliIo): Promise<Explanation> {
  const clusterOnly = (
    ['sandbox', 'pod', 'config-namespace', 'config-name', 'allow-annotation-runtimes', ...DELIVERY_FLAG_NAMES] as const
  ).filter((flag) => flags[flag] !== undefined && flags[flag] !== false);
  if (clusterOnly.length > 0) {
    const needs = clusterOnly.length === 1 ? 'needs' : 'need';
    throw new UsageError(`--${clusterOnly.join(', --')} ${needs} --kubeconfig; offline, explain reads -f POD`);
  }
  const file = flags.filename ?? '-';
  const pod = parsePod(await readInput(file, io), file);
  const deps = await offlineDeps(flags['config-file'], flags['poststart-conflict'], io);
  return explainPod({
    pod,
    namespace: pod.metadata?.namespace ?? 'default',
    origin: `file ${file}`,
    notes: ['offline: runtimes and policy come from the pod annotations, as `inject` reads them'],
    webhook: { state: 'offline' },
    deps: { ...deps, ...wrapperFromImage(flags['wrapper-image']) },
  });
}

async function explainInCluster(kubeconfig: string, flags: ExplainFlags, io: CliIo): Promise<Explanation> {
  if (flags['config-file'] !== undefined)
    throw new UsageError('--config-file is for offline use; with --kubeconfig the ConfigMap is read from the cluster');
  const delivery = flags.sandbox === undefined ? undefined : deliverySettings(flags);
  if (delivery === undefined) {
    const given = DELIVERY_FLAG_NAMES.filter((flag) => flags[flag] !== undefined);
    if (given.length > 0) throw new UsageError(`--${given.join(', --')}: deliver-env's flags are for --sandbox`);
  }
  // Imported here so offline runs never load @kubernetes/client-node.
  const { clusterTarget } = await import('./explain/cluster-target.js');
  const { target, sandbox, reads } = await clusterTarget(kubeconfig, flags, io);
  // --poststart-conflict checked as review and inject check it; the config and runtime choice come from the cluster.
  const base: ReviewDeps = await offlineDeps(undefined, flags['poststart-conflict'], io);
  const explanation = await explainPod({
    ...target,
    deps: { ...base, ...target.deps, ...wrapperFromImage(flags['wrapper-image']) },
  });
  if (delivery === undefined || sandbox === undefined) return explanation;
  const { deliveryFacts } = await import('./explain/delivery-reads.js');
  const facts = await deliveryFacts(reads, sandbox as DeliverySandbox, delivery, () => systemClock.now());
  return { ...explanation, delivery: explainDelivery(facts) };
}
