import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';

// `npm run lint` checks the same, but lint is not part of the tests; this keeps the tree formatted and the
// modules small on every CI run, so that a diff shows what changed and not how it was laid out.
const root = fileURLToPath(new URL('..', import.meta.url));
const ignorePath = `${root}.prettierignore`;

/** The files git tracks (a fresh clone holds exactly these), or, outside a checkout, nothing to compare. */
function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' });
  return out.split('\0').filter((name) => name !== '');
}

async function unformatted(names: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const name of names) {
    const path = `${root}${name}`;
    const info = await prettier.getFileInfo(path, { ignorePath });
    if (info.ignored || info.inferredParser === null) continue;
    const options = await prettier.resolveConfig(path);
    const text = readFileSync(path, 'utf8');
    if (!(await prettier.check(text, { ...options, filepath: path }))) found.push(name);
  }
  return found;
}

describe('the source tree', () => {
  const files = trackedFiles();

  it('is laid out by prettier (npm run format)', async () => {
    expect(files.length).toBeGreaterThan(100);
    expect(await unformatted(files)).toEqual([]);
  }, 60_000);

  it('keeps every module in src/ at 250 lines or fewer', () => {
    const long = files
      .filter((name) => name.startsWith('src/') && name.endsWith('.ts'))
      .map((name) => ({ name, lines: readFileSync(`${root}${name}`, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > 250);
    expect(long).toEqual([]);
  });
});
