/**
 * Reading a command's options from its rows: flags win over environment variables, which win over defaults;
 * one schema from the rows checks and coerces them; `--help` prints one line per row. serve's options
 * (src/config.ts) and deliver-env's (src/deliver/options.ts) are read by this one path.
 */
import { parseArgs } from 'node:util';
import { Ajv, type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import { STARTUP_ERRORS } from '../errors/index.js';
import { errorMessage } from '../util/error-message.js';
import type { OptionRow, ValueType } from './option-row.js';

/** A command's option rows, keyed by the name its parsed options carry. */
export type OptionRows = Readonly<Record<string, OptionRow>>;

type ValueOf<R> = R extends OptionRow<infer K, infer S> ? ValueType<K, S> : never;
type Defaulted<R> = R extends { readonly default: undefined } ? false : true;

/**
 * What the flags and env say: an option with a default is always there, one without only when given. Typed
 * from the rows rather than written out, so a row without a default can never be read as always there.
 */
export type OptionValuesOf<R extends OptionRows> = {
  [K in keyof R as Defaulted<R[K]> extends true ? K : never]: ValueOf<R[K]>;
} & {
  [K in keyof R as Defaulted<R[K]> extends true ? never : K]?: ValueOf<R[K]>;
};

/** Thrown for every bad flag or env value: each problem names the flag and its env var. */
export class OptionsError extends STARTUP_ERRORS.optionsInvalid.Error {
  constructor(readonly problems: readonly string[]) {
    super(problems);
  }
}

// coerceTypes turns the strings of flags and env into integers and booleans.
const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true });

/**
 * ajv fills in the defaults (useDefaults), so every option with a default is required after it ran: the
 * `required` list says the same as `OptionValuesOf`, from the same rows.
 */
export function compileRows<R extends OptionRows>(rows: R): ValidateFunction<OptionValuesOf<R>> {
  const keys = Object.keys(rows);
  const schema: SchemaObject = {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(keys.map((key) => [key, propertySchema(rows[key] as OptionRow)])),
    required: keys.filter((key) => rows[key]?.default !== undefined),
  };
  return ajv.compile<OptionValuesOf<R>>(schema);
}

function propertySchema(row: OptionRow): SchemaObject {
  return { type: row.kind, ...row.schema, ...(row.default === undefined ? {} : { default: row.default }) };
}

/** The values the flags and env give, before validation; 'help' for `--help` or `-h`. */
export function readRows(
  rows: OptionRows,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): Record<string, unknown> | 'help' {
  const flags = readFlags(rows, argv);
  if (flags.help === true) return 'help';
  const raw: Record<string, unknown> = {};
  for (const [key, { flag, env: envName }] of Object.entries(rows)) {
    const fromFlag = flags[flag];
    const fromEnv = env[envName];
    // An empty environment variable counts as unset: manifests often template `value: ""` for "not configured".
    if (fromFlag !== undefined) raw[key] = fromFlag;
    else if (fromEnv !== undefined && fromEnv !== '') raw[key] = fromEnv;
  }
  return raw;
}

function readFlags(rows: OptionRows, argv: readonly string[]): Record<string, string | boolean | undefined> {
  const parseOptions: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const { flag, kind } of Object.values(rows)) {
    parseOptions[flag] = { type: kind === 'boolean' ? 'boolean' : 'string' };
  }
  try {
    const { values } = parseArgs({ args: [...argv], options: parseOptions, strict: true, allowPositionals: false });
    return values;
  } catch (error) {
    throw new OptionsError([errorMessage(error)]);
  }
}

/** What ajv refused, named by flag and env var. */
export function describeSchemaError(rows: OptionRows, error: ErrorObject): string {
  const key = error.instancePath.slice(1);
  const row = Object.hasOwn(rows, key) ? rows[key] : undefined;
  const where = row === undefined ? 'options' : rowLabel(row);
  const values = (error.params as { allowedValues?: unknown }).allowedValues;
  const allowed = error.keyword === 'enum' && Array.isArray(values) ? ` (${values.join(', ')})` : '';
  return `${where}: ${error.message ?? 'is invalid'}${allowed}`;
}

export function rowLabel(row: OptionRow): string {
  return `--${row.flag} (${row.env})`;
}

/**
 * A command's options from its rows, validated against the rows' schema and frozen; for a command whose
 * options need no checks across them (serve's do: src/config.ts).
 */
export function parseCommandOptions<R extends OptionRows>(
  rows: R,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { kind: 'help' } | { kind: 'options'; options: Readonly<OptionValuesOf<R>> } {
  const raw = readRows(rows, argv, env);
  if (raw === 'help') return { kind: 'help' };
  const check = compileRows(rows);
  if (!check(raw)) throw new OptionsError((check.errors ?? []).map((e) => describeSchemaError(rows, e)));
  return { kind: 'options', options: Object.freeze(raw) };
}

/** A command's `--help`: one line per option of its rows. */
/** `description`: what the command does, in a paragraph after the usage line. */
export function commandUsage(command: string, rows: OptionRows, description?: string): string {
  const all = Object.values(rows);
  const width = Math.max(...all.map((row) => row.flag.length)) + 4;
  const lines = all.map(({ flag, env, help, default: fallback }) => {
    const shown =
      fallback === undefined ? '' : ` [default: ${typeof fallback === 'string' ? fallback : JSON.stringify(fallback)}]`;
    return `  ${`--${flag}`.padEnd(width)}${help}${shown}\n  ${' '.repeat(width)}env ${env}`;
  });
  const about = description === undefined ? '' : `${description}\n\n`;
  return `usage: sandbox-injector ${command} [flags]\n\n${about}${lines.join('\n')}\n  ${'-h, --help'.padEnd(width)}this text\n`;
}
