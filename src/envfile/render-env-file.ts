import { assertValidEnvName } from './env-names.js';
import { EnvFileError } from './errors.js';
import { shellQuote } from './shell-quote.js';

/** Variables to write: an object, or pairs when the caller wants to keep an explicit order. */
export type EnvVars = Readonly<Record<string, string>> | readonly (readonly [string, string])[];

const HEADER =
  '# Written by sandbox-injector env-file; sourced by run_with_envs.sh with `set -a`. See docs/env-file.md.\n';

/**
 * Validate every variable and render env.sh. Everything is checked before anything is returned, so a
 * single bad key or value refuses the whole request and the caller never writes half a file.
 */
export function renderEnvFile(vars: EnvVars): string {
  const entries: readonly (readonly [string, unknown])[] = Array.isArray(vars)
    ? (vars as readonly (readonly [string, string])[])
    : Object.entries(vars);
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const [name, value] of entries) {
    assertValidEnvName(name);
    if (seen.has(name)) {
      // With pairs a duplicate is ambiguous (which one did the caller mean?), so refuse rather than guess.
      throw new EnvFileError(`variable ${name} is given more than once`);
    }
    seen.add(name);
    // Callers from JSON or plain JavaScript can slip a number or null past the type.
    if (typeof value !== 'string') {
      throw new EnvFileError(`value of ${name} must be a string, got ${value === null ? 'null' : typeof value}`);
    }
    lines.push(`export ${name}=${quoteValueOf(name, value)}\n`);
  }
  return HEADER + lines.join('');
}

function quoteValueOf(name: string, value: string): string {
  try {
    return shellQuote(value);
  } catch (error) {
    if (error instanceof EnvFileError) {
      throw new EnvFileError(`variable ${name}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}
