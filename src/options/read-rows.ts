/**
 * Reading a command's options from its rows (src/options/option-row.ts): flags win over environment variables,
 * which win over defaults; one schema from the rows checks and coerces them; `--help` prints one line per row.
 * Every command with rows is read by this one path, and bad options come back as a list of problems, each
 * naming the flag and its env var, for the command to refuse at once (src/cli/command.ts).
 *
 * This folder is generic: it knows rows, not what any option means, and imports nothing of the product.
 */
import { parseArgs } from 'node:util';
import { Ajv, type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import { errorMessage } from '../errors/error-message.js';
import { formatDuration, parseDuration } from './duration.js';
import { envName, type OptionRow, type OptionRows, type RulesByKind, type ValueType } from './option-row.js';

export type { OptionRows } from './option-row.js';

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

/** A command line read: help asked for, the options, or every reason they are refused. */
export type ParsedOptions<T> =
  { kind: 'help' } | { kind: 'options'; options: Readonly<T> } | { kind: 'refused'; problems: readonly string[] };

// coerceTypes turns the strings of flags and env into integers and booleans.
const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true });
const compiled = new WeakMap<OptionRows, ValidateFunction>();

/** The options the rows describe, read from flags and env, checked, and frozen. */
export function readOptions<R extends OptionRows>(
  rows: R,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): ParsedOptions<OptionValuesOf<R>> {
  const flags = readFlags(rows, argv);
  if (flags === 'help') return { kind: 'help' };
  if (!flags.ok) return { kind: 'refused', problems: [flags.problem] };
  const problems = formerNames(rows, flags.values, env);
  const raw: Record<string, unknown> = {};
  for (const [key, row] of Object.entries(rows)) {
    const given = flags.values[row.flag] ?? nonEmpty(env[row.env]);
    if (row.kind === 'duration') {
      const read = durationOf(row as OptionRow<'duration', RulesByKind['duration']>, given);
      if ('problem' in read) problems.push(read.problem);
      else if (read.ms !== undefined) raw[key] = read.ms;
    } else if (given !== undefined) raw[key] = given;
  }
  const validate = validatorOf(rows);
  if (!validate(raw)) problems.push(...(validate.errors ?? []).map((error) => describeSchemaError(rows, error)));
  if (problems.length > 0) return { kind: 'refused', problems };
  return { kind: 'options', options: Object.freeze(raw as OptionValuesOf<R>) };
}

/** The options, or the problems found with them by the command's own checks across them. */
export function acceptedUnless<T>(options: Readonly<T>, problems: readonly string[]): ParsedOptions<T> {
  return problems.length > 0 ? { kind: 'refused', problems } : { kind: 'options', options: Object.freeze(options) };
}

// An empty environment variable counts as unset: manifests often template `value: ""` for "not configured".
function nonEmpty(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}

type Flags = { ok: true; values: Record<string, string | boolean | undefined> } | { ok: false; problem: string };

function readFlags(rows: OptionRows, argv: readonly string[]): Flags | 'help' {
  const parseOptions: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const { flag, kind, formerly, short } of Object.values(rows)) {
    parseOptions[flag] = { type: kind === 'boolean' ? 'boolean' : 'string', ...(short === undefined ? {} : { short }) };
    // Known to the parser so that it can be refused by name, rather than as an unknown flag.
    if (formerly !== undefined) parseOptions[formerly.flag] = { type: 'string' };
  }
  try {
    // `--no-FLAG` turns a boolean off, where its default, or an env var, has it on.
    const { values } = parseArgs({
      args: [...argv],
      options: parseOptions,
      strict: true,
      allowPositionals: false,
      allowNegative: true,
    });
    return values.help === true ? 'help' : { ok: true, values };
  } catch (error) {
    return { ok: false, problem: errorMessage(error) };
  }
}

/** A flag or env var renamed is refused rather than ignored: ignored, its value would silently not apply. */
function formerNames(rows: OptionRows, flags: Record<string, unknown>, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  for (const row of Object.values(rows)) {
    if (row.formerly === undefined) continue;
    const oldEnv = envName(row.formerly.flag);
    const fromFlag = flags[row.formerly.flag];
    const fromEnv = nonEmpty(env[oldEnv]);
    if (fromFlag !== undefined) {
      problems.push(`--${row.formerly.flag} is now --${row.flag}${takes(row, fromFlag)}`);
    }
    if (fromEnv !== undefined) problems.push(`${oldEnv} is now ${row.env}${takes(row, fromEnv)}`);
  }
  return problems;
}

/** What the new flag takes, shown with the old one's value when it was a number in the old flag's unit. */
function takes(row: OptionRow, given: unknown): string {
  if (row.kind !== 'duration') return '';
  const unit = row.formerly?.unit;
  const example =
    unit !== undefined && typeof given === 'string' && /^\d+$/.test(given)
      ? `${given}${unit}`
      : typeof row.default === 'string'
        ? row.default
        : (row.schema as RulesByKind['duration']).max;
  return `, which takes a duration such as ${example}`;
}

/** Milliseconds (none when neither given nor defaulted), or the problem, naming the flag. */
function durationOf(
  row: OptionRow<'duration', RulesByKind['duration']>,
  given: string | boolean | undefined,
): { ms: number | undefined } | { problem: string } {
  const text = typeof given === 'string' ? given : (row.default as string | undefined);
  if (text === undefined) return { ms: undefined };
  const read = parseDuration(text);
  const where = rowLabel(row);
  if (!read.ok) return { problem: `${where}: ${read.problem}` };
  const { min, max, step } = row.schema;
  if (read.ms < durationMs(min)) return { problem: `${where}: must be at least ${min}` };
  if (read.ms > durationMs(max)) return { problem: `${where}: must be at most ${max}` };
  if (step !== undefined && read.ms % durationMs(step) !== 0) {
    return { problem: `${where}: must be a whole number of ${step} (${formatDuration(read.ms)} is not)` };
  }
  return { ms: read.ms };
}

/** A duration the rows themselves give: a bad one is a bug in the rows, found the first time they are read. */
function durationMs(text: string): number {
  const read = parseDuration(text);
  if (!read.ok) throw new Error(`option rows: ${read.problem}`);
  return read.ms;
}

/**
 * ajv fills in the defaults (useDefaults), so every option with a default is required after it ran: the
 * `required` list says the same as `OptionValuesOf`, from the same rows.
 */
function validatorOf(rows: OptionRows): ValidateFunction {
  const known = compiled.get(rows);
  if (known !== undefined) return known;
  const keys = Object.keys(rows);
  const schema: SchemaObject = {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(keys.map((key) => [key, propertySchema(rows[key] as OptionRow)])),
    // A duration is read before ajv runs, its default included, or its problem reported there.
    required: keys.filter((key) => rows[key]?.default !== undefined && rows[key]?.kind !== 'duration'),
  };
  const validate = ajv.compile(schema);
  compiled.set(rows, validate);
  return validate;
}

function propertySchema(row: OptionRow): SchemaObject {
  if (row.kind === 'duration') return { type: 'integer' };
  return { type: row.kind, ...row.schema, ...(row.default === undefined ? {} : { default: row.default }) };
}

/** What ajv refused, named by flag and env var. */
function describeSchemaError(rows: OptionRows, error: ErrorObject): string {
  const key = error.instancePath.slice(1);
  const row = Object.hasOwn(rows, key) ? rows[key] : undefined;
  const where = row === undefined ? 'options' : rowLabel(row);
  const values = (error.params as { allowedValues?: unknown }).allowedValues;
  const allowed = error.keyword === 'enum' && Array.isArray(values) ? ` (${values.join(', ')})` : '';
  return `${where}: ${error.message ?? 'is invalid'}${allowed}`;
}

/** How a problem names its option: the flag, and the env var it can also come from. */
export function rowLabel(row: OptionRow): string {
  return `--${row.flag} (${row.env})`;
}

/**
 * A command's `--help`: one line per option of its rows. `description`: what the command does, in a
 * paragraph after the usage line.
 */
export function commandUsage(command: string, rows: OptionRows, description?: string): string {
  const all = Object.values(rows);
  const label = ({ flag, short }: OptionRow): string => (short === undefined ? `--${flag}` : `-${short}, --${flag}`);
  const width = Math.max(...all.map((row) => label(row).length)) + 2;
  const lines = all.map((row) => {
    const { env, help, default: fallback } = row;
    const shown =
      fallback === undefined ? '' : ` [default: ${typeof fallback === 'string' ? fallback : JSON.stringify(fallback)}]`;
    return `  ${label(row).padEnd(width)}${help}${shown}\n  ${' '.repeat(width)}env ${env}`;
  });
  const about = description === undefined ? '' : `${description}\n\n`;
  return `usage: sandbox-injector ${command} [flags]\n\n${about}${lines.join('\n')}\n  ${'-h, --help'.padEnd(width)}this text\n`;
}
