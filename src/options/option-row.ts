/**
 * One row per option: flag, env var, kind, help line, schema keywords and default, declared once. The parser,
 * the schema, the parsed options' type, `--help` and the docs test all read the rows; each command keeps its
 * rows beside it (src/cli/serve/option-rows.ts, src/cli/deliver-env/options.ts).
 */
export type OptionKind = 'string' | 'integer' | 'boolean' | 'duration';

/**
 * The rules that check a value beyond its kind. For strings and integers, JSON Schema keywords handed to ajv as
 * written; integers must say their range: an unbounded count is a typo waiting to pass. A duration says its
 * range as durations (src/options/duration.ts), and `step` when it must be a whole number of that step.
 */
export interface RulesByKind {
  string: { readonly minLength: 1 } | { readonly pattern: string } | { readonly enum: readonly string[] };
  integer: { readonly minimum: number; readonly maximum: number };
  boolean: { readonly [keyword: string]: never };
  duration: { readonly min: string; readonly max: string; readonly step?: string };
}
export type Rules = RulesByKind[OptionKind];

/**
 * A value's TypeScript type, from its kind, narrowed to the allowed values when the rules list them. A
 * duration is read into milliseconds.
 */
export type ValueType<K extends OptionKind, S> = S extends { readonly enum: readonly (infer V)[] }
  ? V
  : { string: string; integer: number; boolean: boolean; duration: number }[K];

/** A default as the command line would give it: a duration is written as one (`30s`), not in milliseconds. */
export type DefaultType<K extends OptionKind, S> = K extends 'duration' ? string : ValueType<K, S>;

export interface OptionRow<K extends OptionKind = OptionKind, S extends Rules = Rules, D = unknown> {
  /** Long flag name, without the leading dashes. */
  readonly flag: string;
  readonly env: string;
  readonly kind: K;
  /** The `--help` line. */
  readonly help: string;
  readonly schema: S;
  /** Taken when neither the flag nor the env var is set; `undefined` leaves the option out. */
  readonly default: D;
  /**
   * The flag this one replaced, refused with a message naming this one (and so is its env var); `unit`: what
   * a number given to the old flag counted, so that the message can say the same value as a duration.
   */
  readonly formerly?: { readonly flag: string; readonly unit?: string };
  /** A one-letter alias (`-o` for `--output`). */
  readonly short?: string;
}

const ENV_PREFIX = 'SANDBOX_INJECTOR_';

/** A flag's environment variable: its name under SANDBOX_INJECTOR_. */
export function envName(flag: string): string {
  return ENV_PREFIX + flag.toUpperCase().replaceAll('-', '_');
}

export function option<const K extends OptionKind, const S extends RulesByKind[K]>(
  flag: string,
  kind: K,
  help: string,
  schema: S,
): OptionRow<K, S, undefined>;
export function option<const K extends OptionKind, const S extends RulesByKind[K], const D extends DefaultType<K, S>>(
  flag: string,
  kind: K,
  help: string,
  schema: S,
  fallback: D,
): OptionRow<K, S, D>;
export function option(flag: string, kind: OptionKind, help: string, schema: Rules, fallback?: unknown): OptionRow {
  return { flag, env: envName(flag), kind, help, schema, default: fallback };
}

/** The row, also taken as `-LETTER`: for the few flags every command spells short, such as `-o`. */
export function withShort<R extends OptionRow>(row: R, letter: string): R {
  return { ...row, short: letter };
}

/** A command's option rows, keyed by the name its parsed options carry. */
export type OptionRows = Readonly<Record<string, OptionRow>>;

/**
 * The rows, each named one noting the flag it replaced and, for a duration, the unit that flag counted in: the
 * old flag and its env var are refused from then on, with a message giving the new flag.
 */
export function withFormerFlags<R extends OptionRows>(
  rows: R,
  former: { readonly [K in keyof R]?: readonly [flag: string, unit?: string] },
): R {
  const renamed: Record<string, OptionRow> = { ...rows };
  for (const [key, [flag, unit] = []] of Object.entries(former)) {
    const row = rows[key];
    if (row === undefined || flag === undefined) continue;
    renamed[key] = { ...row, formerly: unit === undefined ? { flag } : { flag, unit } };
  }
  return renamed as R;
}

/** The rules more than one command's rows use (src/options/option-row.ts says what a rule is). */
export const NON_EMPTY = { minLength: 1 } as const;
export const PORT = { minimum: 0, maximum: 65535 } as const;
export const DNS_LABEL = { pattern: '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$' } as const;
export const DNS_SUBDOMAIN = { pattern: '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$' } as const;
/** pino's levels, which both long-running commands log at. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
