import {
  asksForHelp,
  columns,
  type CommandModule,
  EXIT,
  EXIT_STATUS_HELP,
  isParseArgsError,
  UsageError,
} from './command.js';
import { CliError, type CliIo, writeLine } from './io.js';
import { packageVersion } from './version.js';

interface CommandRow {
  /** The line in the top-level usage. */
  summary: string;
  /** Modules load lazily, so `review` never pays for the server's imports. */
  load: () => Promise<CommandModule>;
}

/** Every command: a new one is a module exporting `usage` and `run`, and a row here. */
const COMMANDS: Record<string, CommandRow> = {
  serve: { summary: 'run the HTTPS admission webhook', load: () => import('./serve.js') },
  review: {
    summary: 'answer an AdmissionReview from a file or stdin, as the webhook would',
    load: () => import('./review.js'),
  },
  inject: { summary: 'print a pod as the webhook would admit it', load: () => import('./inject.js') },
  explain: { summary: 'why a pod did or did not get its runtimes', load: () => import('./explain.js') },
  preflight: {
    summary: 'check a cluster before and after install, one line per check',
    load: () => import('./preflight.js'),
  },
  'deliver-env': {
    summary: "controller: write each claim's environment into its pod through envd",
    load: () => import('./deliver-env.js'),
  },
  'env-file': {
    summary: 'write the per-claim environment file for run_with_envs.sh',
    load: () => import('./env-file.js'),
  },
  'install-wrapper': { summary: 'copy run_with_envs.sh into a directory', load: () => import('./install-wrapper.js') },
};

function topUsage(): string {
  return [
    'usage: sandbox-injector COMMAND [flags]',
    '       sandbox-injector COMMAND --help',
    '       sandbox-injector --version',
    '',
    'commands:',
    columns(Object.entries(COMMANDS).map(([name, row]) => [name, row.summary])),
    '',
    EXIT_STATUS_HELP,
  ].join('\n');
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    writeLine(io.stderr, topUsage());
    return EXIT.usage;
  }
  if (name === '--version') {
    writeLine(io.stdout, `sandbox-injector ${packageVersion()}`);
    return EXIT.ok;
  }
  if (name === '-h' || name === '--help' || name === 'help') return help(rest[0], io);
  const row = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (row === undefined) {
    writeLine(io.stderr, `sandbox-injector: unknown command "${name}"\n${topUsage()}`);
    return EXIT.usage;
  }
  try {
    const command = await row.load();
    if (asksForHelp(rest)) {
      writeLine(io.stdout, commandUsage(command));
      return EXIT.ok;
    }
    return await command.run(rest, io);
  } catch (error) {
    return failed(name, error, io);
  }
}

/** `sandbox-injector help [COMMAND]`, as `--help` and `COMMAND --help` answer. */
async function help(name: string | undefined, io: CliIo): Promise<number> {
  const row = name === undefined || !Object.hasOwn(COMMANDS, name) ? undefined : COMMANDS[name];
  if (name !== undefined && row === undefined) {
    writeLine(io.stderr, `sandbox-injector: unknown command "${name}"\n${topUsage()}`);
    return EXIT.usage;
  }
  writeLine(io.stdout, row === undefined ? topUsage() : commandUsage(await row.load()));
  return EXIT.ok;
}

function commandUsage(command: CommandModule): string {
  const text = typeof command.usage === 'string' ? command.usage : command.usage();
  return `${text.trimEnd()}\n\n${EXIT_STATUS_HELP}`;
}

/** One line on stderr; a usage error also points at the command's `--help`. */
function failed(name: string, error: unknown, io: CliIo): number {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof UsageError || isParseArgsError(error)) {
    writeLine(io.stderr, `sandbox-injector ${name}: ${message}\n(see sandbox-injector ${name} --help)`);
    return EXIT.usage;
  }
  writeLine(io.stderr, `sandbox-injector ${name}: ${message}`);
  return error instanceof CliError ? error.exitCode : EXIT.failed;
}
