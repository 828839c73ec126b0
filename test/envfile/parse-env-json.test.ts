import { describe, expect, it } from 'vitest';

import { EnvFileError } from '../../src/envfile/errors.js';
import { parseEnvJson } from '../../src/envfile/parse-env-json.js';

const SOURCE = '/tmp/claim.json';

function parse(json: unknown): [string, string][] {
  return parseEnvJson(typeof json === 'string' ? json : JSON.stringify(json), SOURCE);
}

/** The message parseEnvJson refuses `text` with; fails the test if it does not refuse. */
function refusal(text: string): string {
  try {
    parseEnvJson(text, SOURCE);
  } catch (error) {
    expect(error).toBeInstanceOf(EnvFileError);
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error(`expected ${text} to be refused`);
}

describe('parseEnvJson, flat map', () => {
  it('reads string values in the order of the file', () => {
    expect(parse('{"ZED": "z", "ALPHA": "a b", "EMPTY": ""}')).toEqual([
      ['ZED', 'z'],
      ['ALPHA', 'a b'],
      ['EMPTY', ''],
    ]);
  });

  it('keeps a string envVars as a variable of the flat map', () => {
    expect(parse({ envVars: 'literal', OTHER: 'o' })).toEqual([
      ['envVars', 'literal'],
      ['OTHER', 'o'],
    ]);
  });

  it('reads an object without envVars but with accessToken or skipRefresh as a request with no variables', () => {
    // OpenKruise Agents drops an empty envVars (omitempty): the token must never become a variable.
    expect(parse({ accessToken: 'runtime-token' })).toEqual([]);
    expect(parse({ accessToken: 'runtime-token', skipRefresh: true })).toEqual([]);
    expect(parse({ skipRefresh: false })).toEqual([]);
  });

  it('matches the envVars key case-sensitively', () => {
    expect(refusal('{"EnvVars": {"A": "1"}}')).toBe(`${SOURCE}: value of "EnvVars" must be a string, got object`);
    expect(parse({ ENVVARS: 'x' })).toEqual([['ENVVARS', 'x']]);
  });
});

describe('parseEnvJson, init-runtime-request', () => {
  it('reads envVars in order and ignores accessToken, skipRefresh and unknown fields', () => {
    const request = {
      accessToken: 'runtime-token',
      envVars: { OPENAI_API_KEY: 'sk-123', GREETING: "it's $HOME" },
      skipRefresh: true,
      futureField: { nested: [1, 2] },
    };
    expect(parse(request)).toEqual([
      ['OPENAI_API_KEY', 'sk-123'],
      ['GREETING', "it's $HOME"],
    ]);
  });

  it('reads null or empty envVars as no variables', () => {
    expect(parse({ envVars: null, accessToken: 'runtime-token', skipRefresh: true })).toEqual([]);
    expect(parse({ envVars: {}, accessToken: 'runtime-token' })).toEqual([]);
  });

  it('reads a request whose only field is envVars', () => {
    expect(parse({ envVars: { ONLY: '1' } })).toEqual([['ONLY', '1']]);
  });
});

describe('parseEnvJson refusals', () => {
  const NOT_AN_OBJECT =
    `${SOURCE} must hold a JSON object of string values, ` + 'or an init-runtime-request object with envVars';
  const NOT_STRINGS = `${SOURCE}: envVars must be an object of string values`;
  it.each<[string, string, string]>([
    ['a number in envVars', '{"envVars": {"A": "x", "FOO": 3}}', `${SOURCE}: envVars.FOO must be a string, got number`],
    ['null in envVars', '{"envVars": {"FOO": null}}', `${SOURCE}: envVars.FOO must be a string, got null`],
    ['an object in envVars', '{"envVars": {"FOO": {}}}', `${SOURCE}: envVars.FOO must be a string, got object`],
    ['a non-identifier key', '{"envVars": {"A B": true}}', `${SOURCE}: envVars["A B"] must be a string, got boolean`],
    ['envVars as an array', '{"envVars": ["A=1"]}', `${NOT_STRINGS}, got array`],
    ['envVars as a number', '{"envVars": 5}', `${NOT_STRINGS}, got number`],
    ['envVars as a boolean', '{"envVars": false}', `${NOT_STRINGS}, got boolean`],
    ['a number in a flat map', '{"OK": "x", "N": 3}', `${SOURCE}: value of "N" must be a string, got number`],
    ['a JSON array', '["A=1"]', NOT_AN_OBJECT],
    ['a JSON string', '"A=1"', NOT_AN_OBJECT],
    ['JSON null', 'null', NOT_AN_OBJECT],
    ['truncated JSON', '{"envVars": {"A": "1"', `${SOURCE} is not valid JSON (line 1, column 22)`],
    ['empty input', '', `${SOURCE} is not valid JSON (it ends too early)`],
  ])('refuses %s', (_label, text, message) => {
    expect(refusal(text)).toBe(message);
  });

  it('reports where the JSON syntax breaks as line and column', () => {
    expect(refusal('{"A": "x"\n  "B": "y"}')).toBe(`${SOURCE} is not valid JSON (line 2, column 3)`);
  });

  // V8 quotes about ten characters either side of a bad token, so the secret sits right at the error.
  const SECRET = 's3cr3t';
  it.each([
    `{"envVars": {"API_KEY": ${SECRET}}}`,
    `{"API_KEY": ${SECRET}}`,
    `{"API_KEY": '${SECRET}'}`,
    `{"API_KEY": "${SECRET}" "NEXT": "x"}`,
    SECRET,
    `{"envVars": {"API_KEY": "${SECRET}", "N": 1}}`,
    `{"envVars": {"API_KEY": ["${SECRET}"]}}`,
    `{"API_KEY": {"${SECRET}": "${SECRET}"}}`,
  ])('does not echo a value in the error for %s', (text) => {
    const message = refusal(text);
    expect(message.startsWith(SOURCE)).toBe(true);
    expect(message).not.toContain(SECRET);
  });
});
