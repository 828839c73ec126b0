import { parseArgs } from 'node:util';
import { reviewAdmission } from '../admission/review.js';
import { columns } from './command.js';
import { CliError, type CliIo, parseJsonInput, readInput, writeLine } from './io.js';
import * as offline from './offline-deps.js';

const WARN_UNWRAPPED_HELP = [
  '--warn-unwrapped',
  "as serve: also warn of what Auto cannot hold until the claim (the shipped Deployment's setting)",
] as const;

export const usage = `usage: sandbox-injector review [--config-file CONFIGMAP] [-f REVIEW|-] ${offline.POSTSTART_CONFLICT_USAGE}
         [--warn-unwrapped]

Prints the AdmissionReview response the webhook would send for REVIEW, from the same code as the server.
A denial is an answer (allowed: false), so it exits 0; input that is not an AdmissionReview exits 1.

${columns([offline.CONFIG_FILE_HELP, ['-f, --filename REVIEW|-', 'the AdmissionReview as JSON (default -: standard input)'], offline.POSTSTART_CONFLICT_HELP, WARN_UNWRAPPED_HELP])}`;

/** Prints the AdmissionReview response the webhook would send. A denial is an answer, so it exits 0. */
export async function run(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { ...offline.FILE_COMMAND_FLAGS, 'warn-unwrapped': { type: 'boolean', default: false } },
    strict: true,
    allowPositionals: false,
  });
  const deps = await offline.offlineDeps(values['config-file'], values['poststart-conflict'], io);
  const text = await readInput(values.filename, io);
  const body = parseJsonInput(text, values.filename);
  const outcome = await reviewAdmission(body, { ...deps, warnUnwrapped: values['warn-unwrapped'] });
  if (outcome.kind === 'bad-request') throw new CliError(`${values.filename}: ${outcome.message}`);
  writeLine(io.stdout, JSON.stringify(outcome.review, null, 2));
  return 0;
}
