/**
 * One row per option: flag, env var, kind, help line, schema keywords and default, declared once. The parser,
 * the schema, the `ServeOptions` type, `--help` and the docs test all read the rows (src/options/rows.ts).
 */
export type OptionKind = 'string' | 'integer' | 'boolean';

/**
 * The JSON Schema keywords that check a value beyond its kind, handed to ajv as written. Integers must say
 * their range: an unbounded count or timeout is a typo waiting to pass.
 */
export interface RulesByKind {
  string: { readonly minLength: 1 } | { readonly pattern: string } | { readonly enum: readonly string[] };
  integer: { readonly minimum: number; readonly maximum: number };
  boolean: { readonly [keyword: string]: never };
}
export type Rules = RulesByKind[OptionKind];

/** A value's TypeScript type, from its kind, narrowed to the allowed values when the rules list them. */
export type ValueType<K extends OptionKind, S> = S extends { readonly enum: readonly (infer V)[] }
  ? V
  : { string: string; integer: number; boolean: boolean }[K];

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
}

const ENV_PREFIX = 'SANDBOX_INJECTOR_';

export function option<const K extends OptionKind, const S extends RulesByKind[K]>(
  flag: string,
  kind: K,
  help: string,
  schema: S,
): OptionRow<K, S, undefined>;
export function option<const K extends OptionKind, const S extends RulesByKind[K], const D extends ValueType<K, S>>(
  flag: string,
  kind: K,
  help: string,
  schema: S,
  fallback: D,
): OptionRow<K, S, D>;
export function option(flag: string, kind: OptionKind, help: string, schema: Rules, fallback?: unknown): OptionRow {
  return { flag, env: ENV_PREFIX + flag.toUpperCase().replaceAll('-', '_'), kind, help, schema, default: fallback };
}
