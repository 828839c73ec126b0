import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

import { EnvFileError } from '../envfile/errors.js';
import { parseEnvJson } from '../envfile/parse-env-json.js';
import { writeEnvFile } from '../envfile/write-env-file.js';
import { INIT_RUNTIME_REQUEST } from '../sandbox/api.js';
import { errorMessage } from '../errors/error-message.js';
import { UsageError } from './command.js';
import type { CliIo } from './io.js';

/** env-file reads no standard input: its values come from arguments or a file. */
type EnvFileIo = Pick<CliIo, 'stdout' | 'stderr'>;

export const usage = `usage: sandbox-injector env-file --dir DIR [KEY=VALUE...]
       sandbox-injector env-file --dir DIR --from-json FILE

Writes DIR/env.sh (mode 0600, atomically) and then DIR/.env_ready, releasing containers
wrapped by run_with_envs.sh. With no variables it only signals readiness.
--from-json FILE reads either a JSON object of string values ({"KEY": "value", ...}) or the
JSON of a Sandbox's ${INIT_RUNTIME_REQUEST} annotation, of which only envVars
is used ({"envVars": {"KEY": "value", ...}, "accessToken": ...}). An object with an envVars
key is read as the latter, unless envVars holds a string: then it is a variable of a flat map.
Without envVars, an accessToken or skipRefresh key also marks a request (with no variables).
A bad name or value, or a directory that cannot be written, exits 1 (docs/env-file.md).
`;

/** `sandbox-injector env-file ...`; `argv` holds the arguments after the subcommand name. */
export async function run(argv: string[], io: EnvFileIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { dir: { type: 'string' }, 'from-json': { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.dir === undefined || values.dir === '') throw new UsageError('--dir DIR is required');
  const jsonFile = values['from-json'];
  if (jsonFile !== undefined && positionals.length > 0) {
    // Two sources would leave it unclear which wins for a repeated name.
    throw new UsageError('give either KEY=VALUE arguments or --from-json FILE, not both');
  }

  // A bad name or value, or a directory that cannot be written, throws an EnvFileError: exit 1 (dispatch.ts).
  const vars = jsonFile === undefined ? parseAssignments(positionals) : await readJsonVars(jsonFile);
  const result = await writeEnvFile(values.dir, vars);
  const noun = result.count === 1 ? 'variable' : 'variables';
  io.stdout.write(`wrote ${result.count} ${noun} to ${result.envFile}; signalled ${result.readyFile}\n`);
  return 0;
}

/** Split each argument at its first '=', so values may themselves contain '='. */
function parseAssignments(args: readonly string[]): [string, string][] {
  return args.map((arg) => {
    const at = arg.indexOf('=');
    if (at < 0) {
      throw new UsageError(`expected KEY=VALUE, got ${JSON.stringify(arg)}`);
    }
    return [arg.slice(0, at), arg.slice(at + 1)];
  });
}

async function readJsonVars(file: string): Promise<[string, string][]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new EnvFileError(`cannot read ${file}: ${errorMessage(error)}`, { cause: error });
  }
  let text: string;
  try {
    // fatal: bad UTF-8 must be refused, not silently replaced by U+FFFD in a variable's value.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (error) {
    throw new EnvFileError(`${file} is not valid UTF-8`, { cause: error });
  }
  return parseEnvJson(text, file);
}
