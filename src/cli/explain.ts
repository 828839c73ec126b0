import { parseArgs } from 'node:util';
import type { ReviewDeps } from '../admission/review.js';
import { wrapperFromImage } from '../wrapper/installer.js';
import { CliError, type CliIo, readInput, writeLine } from './io.js';
import { offlineDeps, POSTSTART_CONFLICT_FLAG, POSTSTART_CONFLICT_USAGE } from './offline-deps.js';
import { parsePod } from './pod-review.js';
import { explainPod, type Explanation } from './explain/explanation.js';
import { renderText } from './explain/render.js';

/** The name manifests/base/mutatingwebhookconfiguration.yaml installs (a test keeps the two equal). */
export const DEFAULT_WEBHOOK_CONFIGURATION = 'sandbox-injector';

export const EXPLAIN_USAGE =
  'usage: sandbox-injector explain [--kubeconfig FILE] (--sandbox NS/NAME | --pod NS/NAME | -f POD) ' +
  '[--config-file CONFIGMAP]... [--webhook-configuration NAME] [--config-namespace NS] [--config-name NAME] ' +
  `[--allow-annotation-runtimes] [--wrapper-image IMAGE] ${POSTSTART_CONFLICT_USAGE} [-o text|json]`;

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
} as const;

export type ExplainFlags = ReturnType<typeof parseFlags>;

function parseFlags(argv: string[]) {
  return parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }).values;
}

/**
 * Answers "why did (or didn't) this pod get its runtime?": the webhook's selectors, where runtimes and policy
 * came from, the config keys, each runtime's fate and the patch, all from the server's own review path.
 */
export async function explainCommand(argv: string[], io: CliIo): Promise<number> {
  const flags = parseFlags(argv);
  if (flags.output !== 'text' && flags.output !== 'json') throw new CliError(`--output: "${flags.output}" is not one of text, json`);
  const targets = [flags.sandbox, flags.pod, flags.filename].filter((target) => target !== undefined);
  if (targets.length !== 1) throw new CliError(`give exactly one of --sandbox, --pod, -f\n${EXPLAIN_USAGE}`, 2);
  const explanation = flags.kubeconfig === undefined ? await explainOffline(flags, io) : await explainInCluster(flags.kubeconfig, flags, io);
  writeLine(io.stdout, flags.output === 'json' ? JSON.stringify(explanation, null, 2) : renderText(explanation));
  return 0;
}

async function explainOffline(flags: ExplainFlags, io: CliIo): Promise<Explanation> {
  const clusterOnly = (['sandbox', 'pod', 'config-namespace', 'config-name', 'allow-annotation-runtimes'] as const).filter(
    (flag) => flags[flag] !== undefined && flags[flag] !== false,
  );
  if (clusterOnly.length > 0) throw new CliError(`--${clusterOnly.join(', --')} need --kubeconfig; offline, explain reads -f POD`, 2);
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
  if (flags['config-file'] !== undefined) throw new CliError('--config-file is for offline use; with --kubeconfig the ConfigMap is read from the cluster', 2);
  // Imported here so offline runs never load @kubernetes/client-node.
  const { clusterTarget } = await import('./explain/cluster-target.js');
  const target = await clusterTarget(kubeconfig, flags, io);
  // --poststart-conflict checked as review and inject check it; the config and runtime choice come from the cluster.
  const base: ReviewDeps = await offlineDeps(undefined, flags['poststart-conflict'], io);
  return explainPod({ ...target, deps: { ...base, ...target.deps, ...wrapperFromImage(flags['wrapper-image']) } });
}
