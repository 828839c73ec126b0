import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { EnvFileError } from '../../src/envfile/errors.js';
import { isShellName } from '../../src/envfile/env-names.js';
import { shellQuote } from '../../src/envfile/shell-quote.js';
import { writeEnvFile } from '../../src/envfile/write-env-file.js';
import {
  exists,
  makeTempDir,
  parseEnv0,
  removeDir,
  runWrapper,
  startWrapper,
  waitUntilWaiting,
  within,
} from '../wrapper/run-wrapper.js';

let dir: string;

beforeEach(async () => {
  dir = await makeTempDir('env-file');
});

afterEach(async () => {
  await removeDir(dir);
});

/** Start the real wrapper on `envDir` and return the environment its command received. */
async function environmentSeenThroughWrapper(envDir: string): Promise<Map<string, Buffer>> {
  const result = await runWrapper(['--', 'env', '-0'], { envDir });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return parseEnv0(result.stdout);
}

function expectSameBytes(seen: Map<string, Buffer>, expected: Iterable<[string, string]>): void {
  for (const [name, value] of expected) {
    // Comparing hex keeps a failure readable and exact about which bytes differ.
    expect(seen.get(name)?.toString('hex'), name).toBe(Buffer.from(value, 'utf8').toString('hex'));
  }
}

describe('writeEnvFile round trip through run_with_envs.sh', () => {
  it('gives back hostile values byte for byte and executes none of them', async () => {
    const canary = path.join(dir, 'canary');
    const hostile: Record<string, string> = {
      H_SINGLE_QUOTE: "it's",
      H_ONLY_QUOTE: "'",
      H_ESCAPED_QUOTE: "\\'",
      H_QUOTE_ESCAPE_SEQUENCE: "'\\''",
      H_DOUBLE_QUOTES: '"double" and "more"',
      H_DOLLAR_HOME: '$HOME',
      H_BRACED: '${HOME}${PATH:-x}',
      H_COMMAND_SUBST: `$(touch ${canary})`,
      H_BACKTICKS: `\`touch ${canary}\``,
      H_BREAKOUT: `'; touch ${canary}; echo '`,
      H_BREAKOUT_ESCAPED: `'\\''; touch ${canary}; echo '\\''`,
      H_BACKSLASHES: 'a\\b\\\\c\\',
      H_NEWLINES: 'line1\nline2\n',
      H_TRAILING_NEWLINES: 'x\n\n\n',
      H_CRLF: 'a\r\nb',
      H_TABS: '\tx\t',
      H_EMPTY: '',
      H_SPACES: '   ',
      H_NON_ASCII: 'ünïcødé ✓ 日本語 🚀',
      H_GLOB: '*',
      H_HISTORY: '!! !$',
      H_TILDE: '~',
      H_EQUALS: 'a=b==',
      H_SEMICOLON: 'x; exit 1',
      H_HASH: '# not a comment',
      H_CONTROL: '\x01\x07\x1b[31m\x7f',
      H_ARITHMETIC: '$((1+1))',
      H_PROCESS_SUBST: `<(touch ${canary})`,
    };

    await writeEnvFile(dir, hostile);
    const seen = await environmentSeenThroughWrapper(dir);

    expectSameBytes(seen, Object.entries(hostile));
    expect(await exists(canary)).toBe(false);
  });

  it('round-trips arbitrary strings without NUL (property)', async () => {
    // Characters that matter to the shell are over-represented; the rest of Unicode comes from 'binary'.
    const shellChar = fc.constantFrom(...'\'"\\$`\n\t\r()!*;#~ ');
    const piece = fc.oneof(shellChar, fc.string({ unit: 'binary', maxLength: 4 }));
    const value = fc.array(piece, { maxLength: 24 }).map((parts) => parts.join('').replaceAll('\0', ''));
    const name = fc.stringMatching(/^[A-Za-z0-9_]{0,10}$/).map((suffix) => `PROP_${suffix}`);
    const vars = fc.uniqueArray(fc.tuple(name, value), { maxLength: 5, selector: ([key]) => key });

    let run = 0;
    await fc.assert(
      fc.asyncProperty(vars, async (pairs) => {
        run += 1;
        const runDir = path.join(dir, `run-${run}`);
        await mkdir(runDir);
        await writeEnvFile(runDir, pairs);
        expectSameBytes(await environmentSeenThroughWrapper(runDir), pairs);
      }),
      { numRuns: 200 },
    );
    // Each run spawns bash (~50 ms here); leave room for slower CI machines.
  }, 120_000);

  it('writes an empty env.sh and the signal when there are no variables', async () => {
    await writeEnvFile(dir, {});
    expect(await exists(path.join(dir, 'env.sh'))).toBe(true);
    expect(await exists(path.join(dir, '.env_ready'))).toBe(true);
    const result = await runWrapper(['--', 'true'], { envDir: dir });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
  });

  it('replaces the values of an earlier write', async () => {
    await writeEnvFile(dir, { FIRST: 'one', SECOND: 'two' });
    await writeEnvFile(dir, [['SECOND', 'again']]);
    const seen = await environmentSeenThroughWrapper(dir);
    expect(seen.has('FIRST')).toBe(false);
    expect(seen.get('SECOND')?.toString()).toBe('again');
  });
});

describe('writeEnvFile file handling', () => {
  it('writes env.sh with mode 0600, replacing a looser existing file, and leaves no temp files', async () => {
    await writeFile(path.join(dir, 'env.sh'), "export OLD='x'\n", { mode: 0o644 });
    const result = await writeEnvFile(dir, [['SECRET', 's3cr3t']]);

    expect((await stat(result.envFile)).mode & 0o777).toBe(0o600);
    expect(result).toEqual({
      envFile: path.join(dir, 'env.sh'),
      readyFile: path.join(dir, '.env_ready'),
      count: 1,
      woken: false,
    });
    // No wrapper made a FIFO, and the writer makes none.
    expect((await readdir(dir)).sort()).toEqual(['.env_ready', 'env.sh']);
  });

  it('writes one export line per variable, in the order given', async () => {
    await writeEnvFile(dir, [
      ['ZED', 'last letter'],
      ['ALPHA', "it's"],
    ]);
    const lines = (await readFile(path.join(dir, 'env.sh'), 'utf8')).split('\n').filter((l) => !l.startsWith('#'));
    expect(lines).toEqual(["export ZED='last letter'", "export ALPHA='it'\\''s'", '']);
  });

  it('does not signal readiness when env.sh cannot be written', async () => {
    // A directory in env.sh's place makes the final rename fail.
    await mkdir(path.join(dir, 'env.sh'));
    await expect(writeEnvFile(dir, { A: 'a' })).rejects.toThrow(EnvFileError);
    expect(await exists(path.join(dir, '.env_ready'))).toBe(false);
    expect(await readdir(dir)).toEqual(['env.sh']);
  });

  it('refuses a directory that does not exist or is a file', async () => {
    await expect(writeEnvFile(path.join(dir, 'missing'), { A: 'a' })).rejects.toThrow(/cannot use env directory/);
    const file = path.join(dir, 'file');
    await writeFile(file, '');
    await expect(writeEnvFile(file, { A: 'a' })).rejects.toThrow(/is not a directory/);
  });
});

describe('writeEnvFile refusals write nothing', () => {
  async function expectRefused(vars: Parameters<typeof writeEnvFile>[1], message: RegExp): Promise<void> {
    const target = await mkdtemp(path.join(dir, 'refused-'));
    const error: unknown = await writeEnvFile(target, vars).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EnvFileError);
    expect(error instanceof Error ? error.message : '').toMatch(message);
    expect(await readdir(target)).toEqual([]);
  }

  it.each(['1LEADING_DIGIT', 'HAS-DASH', 'HAS SPACE', 'A=B', '', 'ÉCOLE', 'A.B', 'A\nB', '$A', 'A\0B'])(
    'refuses the whole request for bad key %j, naming it',
    async (bad) => {
      const named = new RegExp(escapeRegExp(JSON.stringify(bad)));
      await expectRefused(
        [
          ['GOOD_BEFORE', 'x'],
          [bad, 'v'],
          ['GOOD_AFTER', 'y'],
        ],
        named,
      );
    },
  );

  it.each(['UID', 'SHLVL', 'RANDOM', '_', 'PIPESTATUS', 'BASHOPTS'])(
    'refuses bash-managed name %s, which would not reach the command as written',
    async (reserved) => {
      await expectRefused({ OK: 'x', [reserved]: 'v' }, /managed by bash/);
    },
  );

  it('refuses a NUL byte in a value, naming the variable', async () => {
    await expectRefused({ OK: 'x', WITH_NUL: 'a\0b' }, /WITH_NUL.*NUL/);
  });

  it('refuses an unpaired surrogate, which has no UTF-8 encoding', async () => {
    await expectRefused({ LONE: 'a\uD800b' }, /LONE.*surrogate/);
  });

  it('refuses a name given twice', async () => {
    await expectRefused(
      [
        ['TWICE', 'a'],
        ['TWICE', 'b'],
      ],
      /TWICE.*more than once/,
    );
  });

  it('refuses a non-string value smuggled past the types', async () => {
    const fromJson = JSON.parse('{"COUNT": 3}') as Record<string, string>;
    await expectRefused(fromJson, /COUNT must be a string, got number/);
  });

  it('leaves an existing env.sh and missing signal untouched', async () => {
    await writeFile(path.join(dir, 'env.sh'), "export OLD='kept'\n");
    await expect(writeEnvFile(dir, { 'BAD-KEY': 'x' })).rejects.toThrow(/"BAD-KEY"/);
    expect(await readFile(path.join(dir, 'env.sh'), 'utf8')).toBe("export OLD='kept'\n");
    expect(await exists(path.join(dir, '.env_ready'))).toBe(false);
  });
});

describe('writeEnvFile waking the wrapper', () => {
  it('wakes a wrapper waiting on the FIFO, which then runs with the variables', async () => {
    const run = startWrapper(['--', 'bash', '-c', 'printf %s "$TOKEN"'], { envDir: dir });
    expect(await waitUntilWaiting(run.child.pid ?? -1, dir)).toBe('fifo');
    const result = await writeEnvFile(dir, { TOKEN: 'for the claim' });
    expect(result.woken).toBe(true);
    const ran = await within(run.done, 10_000, 'the woken command');
    expect(ran.code).toBe(0);
    expect(ran.stdout.toString()).toBe('for the claim');
  });

  it('neither blocks nor fails on a FIFO that no wrapper holds, nor writes into a plain file there', async () => {
    // The FIFO of a wrapper that has since gone (stopped while waiting): nothing reads it any more.
    const run = startWrapper(['--', 'true'], { envDir: dir });
    await waitUntilWaiting(run.child.pid ?? -1, dir);
    run.child.kill('SIGTERM');
    expect((await within(run.done, 10_000, 'the wrapper stopping')).code).toBe(143);
    const wake = path.join(dir, '.env_wake');
    expect((await stat(wake)).isFIFO()).toBe(true);
    expect((await writeEnvFile(dir, { A: '1' })).woken).toBe(false);

    await rm(wake);
    await writeFile(wake, '');
    expect((await writeEnvFile(dir, { A: '2' })).woken).toBe(false);
    expect(await readFile(wake, 'utf8')).toBe('');
  });
});

describe('shellQuote and names', () => {
  it('single-quotes and escapes embedded single quotes', () => {
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('plain')).toBe("'plain'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('$(x) `y` \\')).toBe("'$(x) `y` \\'");
  });

  it('accepts shell variable names and nothing else', () => {
    for (const good of ['A', '_A', 'a1', 'X_9', 'PATH', 'lower_case', '__']) {
      expect(isShellName(good), good).toBe(true);
    }
    for (const bad of ['', '1A', 'A-B', 'A B', 'É', 'A.B', 'A\n', '-A']) {
      expect(isShellName(bad), bad).toBe(false);
    }
  });

  it('agrees with bash on which names are assignable (property, no spawn per case)', () => {
    // Any name outside [A-Za-z0-9_] or starting with a digit is refused.
    fc.assert(
      fc.property(fc.string({ unit: 'binary-ascii', maxLength: 8 }), (name) => {
        const expected = name.length > 0 && !/^[0-9]/.test(name) && [...name].every((c) => /[A-Za-z0-9_]/.test(c));
        expect(isShellName(name)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
