import { EnvFileError } from './errors.js';

/** A name bash accepts on the left of an assignment. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Names bash manages itself. Assigning them in env.sh either fails (read-only), is overwritten or
 * ignored (dynamic or array variables), or changes meaning (OPTIND is arithmetic; bash adjusts SHLVL
 * on exec), so the command would not see the value asked for. Refusing them keeps the promise that
 * every written variable arrives intact.
 */
const BASH_RESERVED_NAMES: ReadonlySet<string> = new Set([
  // read-only
  'BASHOPTS',
  'BASH_VERSINFO',
  'EUID',
  'PPID',
  'SHELLOPTS',
  'UID',
  // dynamic, or rewritten by bash
  '_',
  'BASHPID',
  'BASH_COMMAND',
  'BASH_SUBSHELL',
  'EPOCHREALTIME',
  'EPOCHSECONDS',
  'HISTCMD',
  'LINENO',
  'OPTIND',
  'RANDOM',
  'SECONDS',
  'SHLVL',
  'SRANDOM',
  // arrays bash owns; arrays are never exported
  'BASH_ALIASES',
  'BASH_ARGC',
  'BASH_ARGV',
  'BASH_CMDS',
  'BASH_LINENO',
  'BASH_SOURCE',
  'DIRSTACK',
  'FUNCNAME',
  'GROUPS',
  'PIPESTATUS',
]);

export function isShellName(name: string): boolean {
  return SHELL_NAME.test(name);
}

function isBashReservedName(name: string): boolean {
  return BASH_RESERVED_NAMES.has(name);
}

/** Throw an error naming the key if it cannot be written as an environment variable. */
export function assertValidEnvName(name: string): void {
  if (!isShellName(name)) {
    throw new EnvFileError(
      `invalid variable name ${JSON.stringify(name)}: use letters, digits and '_', not starting with a digit`,
    );
  }
  if (isBashReservedName(name)) {
    throw new EnvFileError(
      `variable name ${JSON.stringify(name)} is managed by bash and would not reach the command as written`,
    );
  }
}
