import { isShellName } from './env-names.js';
import { jsonErrorPosition } from '../errors/error-message.js';
import { EnvFileError } from './errors.js';

type JsonObject = Record<string, unknown>;

/**
 * Read the variables of a `--from-json` file into pairs, keeping the file's order. Two shapes are accepted:
 *
 * - a flat map, `{"KEY": "value", ...}`;
 * - the JSON of a Sandbox's init-runtime-request annotation (INIT_RUNTIME_REQUEST, src/sandbox/api.ts),
 *   `{"envVars": {"KEY": "value", ...}, "accessToken": "...", "skipRefresh": true}`. Only `envVars` is read:
 *   the other fields are meant for the agent-runtime, not for the app's environment.
 *
 * Only string values are taken: turning numbers, booleans or null into text would guess at a representation
 * the caller never chose. Errors name the offending field and its JSON type, never its value, which may be a
 * secret.
 */
export function parseEnvJson(text: string, source: string): [string, string][] {
  const parsed = parseJson(text, source);
  if (!isJsonObject(parsed)) {
    throw new EnvFileError(
      `${source} must hold a JSON object of string values, or an init-runtime-request object with envVars`,
    );
  }
  if (isInitRuntimeRequest(parsed)) {
    return requestVars(parsed.envVars, source);
  }
  return stringPairs(parsed, (name) => `${source}: value of ${JSON.stringify(name)}`);
}

/** Fields only a request has; OpenKruise Agents leaves `envVars` out altogether when there are no variables. */
const REQUEST_ONLY_FIELDS = ['accessToken', 'skipRefresh'] as const;

/**
 * A flat map's values are all strings, so an `envVars` holding anything else cannot be one of its variables
 * and must be the request's field; an `envVars` holding a string stays a variable of that name. A request with
 * no variables has no `envVars` at all, so `accessToken` or `skipRefresh` also mark a request: read as a flat
 * map, the runtime's access token would become a variable of the app.
 */
function isInitRuntimeRequest(object: JsonObject): boolean {
  if (Object.hasOwn(object, 'envVars')) return typeof object.envVars !== 'string';
  return REQUEST_ONLY_FIELDS.some((field) => Object.hasOwn(object, field));
}

function requestVars(envVars: unknown, source: string): [string, string][] {
  // Writers encode "no variables" as null (a nil Go map without omitempty) as readily as {}, or leave it out.
  if (envVars === null || envVars === undefined) {
    return [];
  }
  if (!isJsonObject(envVars)) {
    throw new EnvFileError(`${source}: envVars must be an object of string values, got ${kindOf(envVars)}`);
  }
  return stringPairs(envVars, (name) => `${source}: ${fieldPath('envVars', name)}`);
}

function stringPairs(object: JsonObject, describeField: (name: string) => string): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(object)) {
    if (typeof value !== 'string') {
      throw new EnvFileError(`${describeField(name)} must be a string, got ${kindOf(value)}`);
    }
    pairs.push([name, value]);
  }
  return pairs;
}

function parseJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    // V8 quotes the text around a bad token in its message, and that text may be a secret, so neither the
    // message nor the error itself (as a cause, which loggers print) is passed on; only the position is.
    throw new EnvFileError(`${source} is not valid JSON${whereParsingFailed(error, text)}`);
  }
}

function whereParsingFailed(error: unknown, text: string): string {
  const message = error instanceof Error ? error.message : '';
  if (message === 'Unexpected end of JSON input') {
    return ' (it ends too early)';
  }
  const where = jsonErrorPosition(text, error);
  return where === undefined ? '' : ` (line ${where.line}, column ${where.column})`;
}

/** `envVars.FOO` reads naturally; a key that is no identifier is quoted so the path stays unambiguous. */
function fieldPath(parent: string, name: string): string {
  return isShellName(name) ? `${parent}.${name}` : `${parent}[${JSON.stringify(name)}]`;
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}
