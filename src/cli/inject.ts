import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { reviewAdmission } from '../admission/review.js';
import { autoWarnings, wrappedWithoutInstaller, type Pod } from '../injection/index.js';
import { wrapperFromImage } from './wrapper-installer.js';
import type { RuntimeSelection } from '../sandbox/runtime-selection.js';
import { podCreateReview } from '../kube-shapes/pod-create-review.js';
import { POLICY_ANNOTATION, RUNTIMES_ANNOTATION } from '../sandbox/api.js';
import { firstPolicy, parsePolicy, parseRuntimeList, runtimesFromAnnotations } from '../sandbox/runtime-selection.js';
import { columns, UsageError } from './command.js';
import { CliError, type CliIo, readInput, writeLine } from './io.js';
import {
  CONFIG_FILE_HELP,
  FILE_COMMAND_FLAGS,
  offlineDeps,
  POSTSTART_CONFLICT_HELP,
  POSTSTART_CONFLICT_USAGE,
} from './offline-deps.js';
import { applyResponsePatch, parsePod } from './pod-review.js';

export const usage = `usage: sandbox-injector inject [--config-file CONFIGMAP] [-f POD|-] [--runtimes a,b]
         [--env-vars-injection-policy Auto|None] [--wrapper-image IMAGE] ${POSTSTART_CONFLICT_USAGE} [-o yaml|json]

Prints POD as the webhook would admit it (like istioctl kube-inject); warnings go to stderr, whole, with what
Auto cannot hold until the claim (as serve --warn-unwrapped, the Deployment's setting). Runtimes and policy
come from the pod's annotations (${RUNTIMES_ANNOTATION}, ${POLICY_ANNOTATION}) unless
the flags give them. A denial prints its message on stderr and exits 1.

${columns([
  CONFIG_FILE_HELP,
  ['-f, --filename POD|-', 'the Pod manifest, YAML or JSON (default -: standard input)'],
  ['--runtimes a,b', 'the runtimes to inject, instead of the annotation'],
  ['--env-vars-injection-policy P', 'Auto or None, instead of the annotation'],
  ['--wrapper-image IMAGE', 'add the init container that installs run_with_envs.sh, from this image'],
  POSTSTART_CONFLICT_HELP,
  ['-o, --output yaml|json', 'the output format (default yaml)'],
])}`;

/** Prints the pod as the webhook would admit it, like `istioctl kube-inject`; warnings go to stderr. */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...FILE_COMMAND_FLAGS,
      runtimes: { type: 'string' },
      'env-vars-injection-policy': { type: 'string' },
      'wrapper-image': { type: 'string' },
      output: { type: 'string', short: 'o', default: 'yaml' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.output !== 'yaml' && values.output !== 'json') {
    throw new UsageError(`--output: "${values.output}" is not one of yaml, json`);
  }
  const flagPolicy = values['env-vars-injection-policy'];
  if (flagPolicy !== undefined) {
    const checked = parsePolicy(flagPolicy, '--env-vars-injection-policy');
    if (!checked.ok) throw new UsageError(checked.denial.message);
  }
  const deps = await offlineDeps(values['config-file'], values['poststart-conflict'], io);
  const pod = parsePod(await readInput(values.filename, io), values.filename);

  const namespace = pod.metadata?.namespace ?? 'default';
  const outcome = await reviewAdmission(podCreateReview(pod, { uid: 'sandbox-injector-inject', namespace }), {
    ...deps,
    ...wrapperFromImage(values['wrapper-image']),
    warnUnwrapped: true,
    selectRuntimes: (pod) => selectionWithFlags(pod, values.runtimes, flagPolicy),
  });
  if (outcome.kind === 'bad-request') throw new CliError(outcome.message);
  const response = outcome.review.response;
  for (const warning of outcome.summary.warningMessages) writeLine(io.stderr, `warning: ${warning}`);
  if (response?.allowed !== true) {
    throw new CliError(`denied: ${response?.status?.message ?? 'no reason given'}`);
  }
  const mutated = applyResponsePatch(pod, response.patch);
  if (values['wrapper-image'] === undefined && wrappedWithoutInstaller(mutated)) {
    writeLine(io.stderr, `note: ${autoWarnings.noWrapperImageNote()}`);
  }
  writeLine(io.stdout, values.output === 'json' ? JSON.stringify(mutated, null, 2) : stringify(mutated));
  return 0;
}

/** The pod's annotations, with --runtimes and --env-vars-injection-policy taking precedence where given. */
function selectionWithFlags(pod: Pod, runtimes: string | undefined, policy: string | undefined): RuntimeSelection {
  if (runtimes === undefined && policy === undefined) return runtimesFromAnnotations(pod);
  const annotations = pod.metadata.annotations ?? {};
  const field = policy === undefined ? `annotation ${POLICY_ANNOTATION}` : '--env-vars-injection-policy';
  const checked = firstPolicy([[policy ?? annotations[POLICY_ANNOTATION], field]]);
  if (!checked.ok) return checked;
  const names = parseRuntimeList(runtimes ?? annotations[RUNTIMES_ANNOTATION] ?? '');
  const source = runtimes === undefined ? `annotation ${RUNTIMES_ANNOTATION}` : '--runtimes';
  return { ok: true, runtimes: names, policy: checked.policy, source, policySource: checked.field };
}
