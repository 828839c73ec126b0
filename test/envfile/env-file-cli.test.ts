import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { main } from '../../src/cli/dispatch.js';
import { exists, makeTempDir, parseEnv0, removeDir, runWrapper } from '../wrapper/run-wrapper.js';

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.text += chunk.toString();
    callback();
  }
}

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(argv: string[]): Promise<CliRun> {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await main(['env-file', ...argv], { stdin: Readable.from([]), stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

async function seenThroughWrapper(envDir: string): Promise<Map<string, string>> {
  const result = await runWrapper(['--', 'env', '-0'], { envDir });
  expect(result.code).toBe(0);
  return new Map([...parseEnv0(result.stdout)].map(([name, value]) => [name, value.toString('utf8')]));
}

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('env-file-cli');
});

afterEach(async () => {
  await removeDir(dir);
});

describe('sandbox-injector env-file', () => {
  it('writes KEY=VALUE arguments, splitting only at the first "="', async () => {
    const run = await cli(['--dir', dir, 'PLAIN=1', 'WITH_EQUALS=x=y==', 'EMPTY=', "HOSTILE=it's $(id) `id`\nnext"]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/wrote 4 variables to .*env\.sh; signalled .*\.env_ready/);

    const seen = await seenThroughWrapper(dir);
    expect(seen.get('PLAIN')).toBe('1');
    expect(seen.get('WITH_EQUALS')).toBe('x=y==');
    expect(seen.get('EMPTY')).toBe('');
    expect(seen.get('HOSTILE')).toBe("it's $(id) `id`\nnext");
  });

  it('writes the string values of a --from-json object', async () => {
    const json = path.join(dir, 'vars.json');
    await writeFile(json, JSON.stringify({ FROM_JSON: 'a\tb\n', UNICODE: 'ünï ✓', QUOTE: "'" }));
    const envDir = await makeTempDir('env-file-cli-target');
    try {
      const run = await cli(['--dir', envDir, '--from-json', json]);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const seen = await seenThroughWrapper(envDir);
      expect(seen.get('FROM_JSON')).toBe('a\tb\n');
      expect(seen.get('UNICODE')).toBe('ünï ✓');
      expect(seen.get('QUOTE')).toBe("'");
    } finally {
      await removeDir(envDir);
    }
  });

  it('writes only the envVars of an init-runtime-request --from-json file', async () => {
    const json = path.join(dir, 'init-runtime-request.json');
    const accessToken = 'runtime-token-7f3a';
    // The annotation agents.kruise.io/init-runtime-request as OpenKruise Agents writes it on a claimed Sandbox.
    await writeFile(
      json,
      JSON.stringify({
        envVars: { OPENAI_API_KEY: 'sk-abc', GREETING: "it's $HOME\nbye", EMPTY: '' },
        accessToken,
        skipRefresh: true,
      }),
    );
    const envDir = await makeTempDir('env-file-cli-target');
    try {
      const run = await cli(['--dir', envDir, '--from-json', json]);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/wrote 3 variables to .*env\.sh; signalled .*\.env_ready/);

      const seen = await seenThroughWrapper(envDir);
      expect(seen.get('OPENAI_API_KEY')).toBe('sk-abc');
      expect(seen.get('GREETING')).toBe("it's $HOME\nbye");
      expect(seen.get('EMPTY')).toBe('');
      for (const field of ['envVars', 'accessToken', 'skipRefresh']) {
        expect(seen.has(field), field).toBe(false);
      }
      expect(await readFile(path.join(envDir, 'env.sh'), 'utf8')).not.toContain(accessToken);
    } finally {
      await removeDir(envDir);
    }
  });

  it.each([
    ['whose envVars is null', { envVars: null, accessToken: 'runtime-token-7f3a' }],
    ['without envVars, as OpenKruise Agents writes it then', { accessToken: 'runtime-token-7f3a', skipRefresh: true }],
  ])('only signals readiness for an init-runtime-request %s', async (_name, request) => {
    const json = path.join(dir, 'init-runtime-request.json');
    await writeFile(json, JSON.stringify(request));
    const envDir = await makeTempDir('env-file-cli-target');
    try {
      const run = await cli(['--dir', envDir, '--from-json', json]);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/wrote 0 variables/);
      expect(await exists(path.join(envDir, '.env_ready'))).toBe(true);
      expect(await readFile(path.join(envDir, 'env.sh'), 'utf8')).not.toMatch(/^export /m);
      expect(await readFile(path.join(envDir, 'env.sh'), 'utf8')).not.toContain('runtime-token-7f3a');
    } finally {
      await removeDir(envDir);
    }
  });

  it('writes a string envVars of a flat --from-json map as a variable', async () => {
    const json = path.join(dir, 'vars.json');
    await writeFile(json, JSON.stringify({ envVars: 'a plain value', OTHER: 'o' }));
    const envDir = await makeTempDir('env-file-cli-target');
    try {
      const run = await cli(['--dir', envDir, '--from-json', json]);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const seen = await seenThroughWrapper(envDir);
      expect(seen.get('envVars')).toBe('a plain value');
      expect(seen.get('OTHER')).toBe('o');
    } finally {
      await removeDir(envDir);
    }
  });

  it('only signals readiness when given no variables', async () => {
    const run = await cli([`--dir=${dir}`]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/wrote 0 variables/);
    expect(await exists(path.join(dir, '.env_ready'))).toBe(true);
  });

  it('prints usage for --help', async () => {
    const run = await cli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^usage: sandbox-injector env-file --dir DIR/);
  });
});

describe('sandbox-injector env-file errors', () => {
  async function expectNothingWritten(): Promise<void> {
    expect(await exists(path.join(dir, 'env.sh'))).toBe(false);
    expect(await exists(path.join(dir, '.env_ready'))).toBe(false);
  }

  it.each<[string, (d: string) => string[], number, RegExp]>([
    ['missing --dir', () => ['A=1'], 2, /--dir DIR is required/],
    ['an argument without "="', (d) => ['--dir', d, 'A=1', 'NOEQUALS'], 2, /expected KEY=VALUE, got "NOEQUALS"/],
    ['an unknown option', (d) => ['--dir', d, '--bogus'], 2, /--bogus/],
    ['both sources', (d) => ['--dir', d, '--from-json', 'x.json', 'A=1'], 2, /either KEY=VALUE arguments or --from/],
    ['a bad key', (d) => ['--dir', d, 'GOOD=1', '1BAD=2'], 1, /invalid variable name "1BAD"/],
    ['an empty key', (d) => ['--dir', d, '=value'], 1, /invalid variable name ""/],
    ['a bash-managed key', (d) => ['--dir', d, 'SHLVL=9'], 1, /"SHLVL" is managed by bash/],
    ['a repeated key', (d) => ['--dir', d, 'A=1', 'A=2'], 1, /A is given more than once/],
    ['a missing directory', (d) => ['--dir', path.join(d, 'nope'), 'A=1'], 1, /cannot use env directory/],
  ])('refuses %s', async (_label, argv, code, message) => {
    const run = await cli(argv(dir));
    expect(run.code).toBe(code);
    expect(run.stderr).toMatch(/^sandbox-injector env-file: /);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
    await expectNothingWritten();
  });

  it.each<[string, string | Buffer, RegExp]>([
    ['invalid JSON', '{"A": ', /is not valid JSON/],
    ['a JSON array', '["A=1"]', /must hold a JSON object of string values/],
    ['JSON null', 'null', /must hold a JSON object of string values/],
    ['a number value', '{"OK": "x", "N": 3}', /value of "N" must be a string, got number/],
    ['a nested object', '{"O": {"x": "y"}}', /value of "O" must be a string, got object/],
    ['a NUL in a value', '{"Z": "a\\u0000b"}', /variable Z: value contains a NUL byte/],
    ['a bad key', '{"BAD KEY": "x"}', /invalid variable name "BAD KEY"/],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x41, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), /is not valid UTF-8/],
    ['a number in envVars', '{"envVars": {"OK": "x", "FOO": 3}}', /vars\.json: envVars\.FOO must be a string/],
    ['envVars as an array', '{"envVars": ["A=1"]}', /vars\.json: envVars must be an object of string values/],
    ['a bad key in envVars', '{"envVars": {"BAD KEY": "x"}}', /invalid variable name "BAD KEY"/],
    ['a bash-managed key in envVars', '{"envVars": {"SHLVL": "9"}}', /"SHLVL" is managed by bash/],
  ])('refuses --from-json with %s', async (_label, content, message) => {
    const json = path.join(dir, 'vars.json');
    await writeFile(json, content);
    const run = await cli(['--dir', dir, '--from-json', json]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(message);
    await expectNothingWritten();
    expect(await readdir(dir)).toEqual(['vars.json']);
  });

  it('does not echo --from-json content in its errors', async () => {
    const json = path.join(dir, 'vars.json');
    await writeFile(json, '{"envVars": {"API_KEY": s3cr3t}}');
    const run = await cli(['--dir', dir, '--from-json', json]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`sandbox-injector env-file: ${json} is not valid JSON\n`);
    await expectNothingWritten();
  });

  it('refuses a --from-json file that cannot be read', async () => {
    const run = await cli(['--dir', dir, '--from-json', path.join(dir, 'absent.json')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot read .*absent\.json/);
    await expectNothingWritten();
  });
});
