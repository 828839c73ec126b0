/**
 * Every command of the built CLI answers `--help` and `-h` with its usage and exit 0, and a wrong command line
 * with exit 2; the top level does the same and prints the version. The commands are read from the top-level
 * usage, so a command added to dispatch.ts is held to this without a line here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { asksForHelp } from '../../src/cli/command.js';
import { runCli as cli } from '../support/cli.js';

const PACKAGE = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const topHelp = await cli(['--help']);
/** The names under `commands:` in the top-level usage. */
const listed = [...(topHelp.stdout.split('\ncommands:\n')[1] ?? '').matchAll(/^ {2}(\S+) {2,}\S/gm)].map(
  (match) => match[1] ?? '',
);

describe('sandbox-injector (top level)', () => {
  it('--help and -h print the usage on stdout and exit 0, listing every command', async () => {
    expect(topHelp).toMatchObject({ code: 0, stderr: '' });
    expect(topHelp.stdout).toMatch(/^usage: sandbox-injector COMMAND/);
    expect(listed).toEqual(
      expect.arrayContaining(['serve', 'review', 'inject', 'explain', 'env-file', 'install-wrapper']),
    );
    expect(await cli(['-h'])).toEqual(topHelp);
    expect(await cli(['help'])).toEqual(topHelp);
  });

  it('aligns the command list: every summary starts in the same column', () => {
    const rows = (topHelp.stdout.split('\ncommands:\n')[1] ?? '').split('\n\n')[0]?.split('\n') ?? [];
    const columns = new Set(rows.map((row) => row.search(/(?<=\S {2,})\S/)));
    expect(rows.length).toBe(listed.length);
    expect(columns.size).toBe(1);
  });

  it('says the exit status rule', () => {
    expect(topHelp.stdout).toContain('exit status: 0 done, 1 failed (the message says why), 2 usage error');
  });

  it('--version prints the version of package.json and exits 0', async () => {
    expect(await cli(['--version'])).toEqual({ code: 0, stdout: `sandbox-injector ${PACKAGE.version}\n`, stderr: '' });
  });

  it('exits 2 with the usage on stderr for no command, an unknown command, or help for one', async () => {
    for (const args of [[], ['frobnicate'], ['help', 'frobnicate']]) {
      const run = await cli(args);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('usage: sandbox-injector COMMAND');
    }
  });
});

describe.each(listed)('sandbox-injector %s', (name) => {
  it('--help and -h print its usage on stdout, with the exit status rule, and exit 0', async () => {
    const long = await cli([name, '--help']);
    expect(long.code).toBe(0);
    expect(long.stderr).toBe('');
    expect(long.stdout).toMatch(new RegExp(`^usage: sandbox-injector ${name} `));
    expect(long.stdout).toContain('exit status: 0 done, 1 failed');
    expect(await cli([name, '-h'])).toEqual(long);
    expect(await cli(['help', name])).toEqual(long);
  });

  it('answers --help also after other flags, even wrong ones', async () => {
    const run = await cli([name, '--no-such-flag', '-h']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^usage: sandbox-injector ${name} `));
  });

  it('exits 2 for an unknown flag, naming it and pointing at --help', async () => {
    const run = await cli([name, '--no-such-flag']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`sandbox-injector ${name}: Unknown option '--no-such-flag'`);
    expect(run.stderr).toContain(`(see sandbox-injector ${name} --help)`);
  });
});

describe('usage errors beyond unknown flags exit 2 in every command', () => {
  it.each([
    ['install-wrapper without --dir', ['install-wrapper'], /--dir DIR is required/],
    ['env-file without --dir', ['env-file', 'A=1'], /--dir DIR is required/],
    ['serve with a bad value', ['serve', '--port', 'https'], /--port \(SANDBOX_INJECTOR_PORT\): must be integer/],
    [
      'review with a bad --poststart-conflict',
      ['review', '--poststart-conflict', 'chain'],
      /--poststart-conflict: "chain" is not one of/,
    ],
    ['inject with a bad --output', ['inject', '-o', 'xml'], /--output: "xml" is not one of yaml, json/],
    [
      'inject with a bad --env-vars-injection-policy',
      ['inject', '--env-vars-injection-policy', 'Sometimes'],
      /is not a valid EnvVarsInjectionPolicy/,
    ],
    ['explain with no pod', ['explain'], /give exactly one of --sandbox, --pod, -f/],
    ['a flag without its value', ['review', '-f'], /Option '-f, --filename <value>' argument missing/],
  ])('%s', async (_name, args, message) => {
    const run = await cli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });

  it('a failure that is not a usage error exits 1', async () => {
    const run = await cli(['review', '-f', '/nonexistent/review.json']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^sandbox-injector review: cannot read \/nonexistent\/review\.json: ENOENT/);
    expect(run.stderr).not.toContain('--help');
  });
});

describe('asksForHelp', () => {
  it('sees -h and --help anywhere before --, and nothing after it', () => {
    expect(asksForHelp(['--dir', 'd', '-h'])).toBe(true);
    expect(asksForHelp(['--help'])).toBe(true);
    expect(asksForHelp(['--dir', 'd', '--', '--help'])).toBe(false);
    expect(asksForHelp(['KEY=--help', '--helpful'])).toBe(false);
  });
});
