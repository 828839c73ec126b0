import { EnvFileError } from './errors.js';

/**
 * Read `{"KEY": "value", ...}` into pairs, keeping the file's order. Only string values are taken:
 * turning numbers, booleans or null into text would guess at a representation the caller never chose.
 */
export function parseEnvJson(text: string, source: string): [string, string][] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new EnvFileError(`${source} is not valid JSON: ${reason}`, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new EnvFileError(`${source} must hold a JSON object of string values`);
  }
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value !== 'string') {
      const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
      throw new EnvFileError(`${source}: value of ${JSON.stringify(name)} must be a string, got ${kind}`);
    }
    pairs.push([name, value]);
  }
  return pairs;
}
