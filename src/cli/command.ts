/**
 * What every subcommand shares, so a new one gets it by being listed in dispatch.ts: `-h`/`--help`, and one
 * exit-status rule. A command module exports `usage` (its `--help` text) and `run(argv, io)`; the dispatcher
 * answers `--help` before `run` is called, and turns what `run` throws into a message and an exit status.
 */
import { STARTUP_ERRORS } from '../errors/index.js';
import type { ParsedOptions } from '../options/read-rows.js';
import { CliError, type CliIo } from './io.js';

/** The one rule for every command (docs/cli.md); `run` returns EXIT.ok or throws. */
export const EXIT = {
  ok: 0,
  /** The command line was understood, but the work failed or was refused (a message says why). */
  failed: 1,
  /** The command line itself is wrong: an unknown flag, a missing one, a bad flag value, flags that conflict. */
  usage: 2,
} as const;

export const EXIT_STATUS_HELP =
  'exit status: 0 done, 1 failed (the message says why), 2 usage error (a wrong command line)';

/** A wrong command line: exits 2, with a pointer to the command's `--help`. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** The shape dispatch.ts requires of a command module (checked by the compiler on its `import()`). */
export interface CommandModule {
  /** The `--help` text; its first line is the synopsis, `usage: sandbox-injector NAME ...`. */
  readonly usage: string | (() => string);
  run(argv: string[], io: CliIo): Promise<number>;
}

/**
 * `-h` or `--help` anywhere before a `--` asks for help, whatever else is on the line: a person who adds it to
 * a failing command wants to read how it is used, not the next error.
 */
export function asksForHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((arg) => arg === '-h' || arg === '--help');
}

/** The errors `node:util` parseArgs throws for an unknown flag, a missing value or a stray argument. */
export function isParseArgsError(error: unknown): error is Error {
  return (
    error instanceof Error &&
    'code' in error &&
    typeof error.code === 'string' &&
    error.code.startsWith('ERR_PARSE_ARGS_')
  );
}

/** Two columns, the first padded to its longest entry: the flag and command lists of every `--help`. */
export function columns(rows: readonly (readonly [string, string])[], indent = '  '): string {
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  return rows.map(([left, right]) => `${indent}${left.padEnd(width)}${right}`.trimEnd()).join('\n');
}

/**
 * The options of a command read from its rows (serve, deliver-env): bad flags and bad environment variables
 * alike are a usage error (exit 2), all of them in one message. `undefined` when the line asked for help,
 * which `usage` has then been written for.
 */
export function commandOptions<T>(
  parsed: ParsedOptions<T>,
  usage: () => string,
  stdout: NodeJS.WritableStream = process.stdout,
): Readonly<T> | undefined {
  if (parsed.kind === 'refused') throw new UsageError(STARTUP_ERRORS.optionsInvalid(parsed.problems).message);
  if (parsed.kind === 'options') return parsed.options;
  stdout.write(usage());
  return undefined;
}
