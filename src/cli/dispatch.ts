import { CliError, type CliIo, writeLine } from './io.js';
import { explainCommand, EXPLAIN_USAGE } from './explain.js';
import { injectCommand, INJECT_USAGE } from './inject.js';
import { reviewCommand, REVIEW_USAGE } from './review.js';

type Command = (argv: string[], io: CliIo) => Promise<number>;

const USAGE = [
  'usage: sandbox-injector <command> [flags]',
  '',
  'commands:',
  '  serve        run the HTTPS admission webhook',
  `  review       answer an AdmissionReview from a file or stdin (${REVIEW_USAGE.replace('usage: ', '')})`,
  `  inject       print a pod as the webhook would admit it (${INJECT_USAGE.replace('usage: ', '')})`,
  `  explain      why a pod did or did not get its runtimes (${EXPLAIN_USAGE.replace('usage: ', '')})`,
  '  deliver-env  controller: write each claim\'s environment into its pod through envd',
  '  env-file     write the per-claim environment file for run_with_envs.sh',
  '  install-wrapper --dir DIR   copy run_with_envs.sh into DIR',
].join('\n');

/** Commands load lazily so `review` never pays for the server's imports. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  review: () => Promise.resolve(reviewCommand),
  inject: () => Promise.resolve(injectCommand),
  explain: () => Promise.resolve(explainCommand),
  serve: async () => (await import('./serve.js')).serveCommand,
  'deliver-env': async () => (await import('./deliver-env.js')).deliverEnvCommand,
  'env-file': async () => (await import('./env-file.js')).envFileCommand,
  'install-wrapper': async () => (await import('./install-wrapper.js')).installWrapperCommand,
};

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    writeLine(name === undefined ? io.stderr : io.stdout, USAGE);
    return name === undefined ? 2 : 0;
  }
  const load = COMMANDS[name];
  if (load === undefined) {
    writeLine(io.stderr, `unknown command "${name}"\n${USAGE}`);
    return 2;
  }
  try {
    return await (await load())(rest, io);
  } catch (error) {
    writeLine(io.stderr, `sandbox-injector ${name}: ${errorMessage(error)}`);
    return error instanceof CliError ? error.exitCode : 1;
  }
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
