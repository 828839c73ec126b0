// Each name of the Sandbox API is spelled once, in src/sandbox/api.ts; every other file of src/ imports
// it. A second spelling would drift from the first on the next rename upstream, so a test looks for one.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const HOME = path.join('sandbox', 'api.ts');
/** The API's domain, which each of its names, and each of ours under it, contains. */
const DOMAIN = 'kruise.io';

/** `file:line: text` for each line of `file` (under src/) that spells the domain. */
function spellings(file: string): string[] {
  return readFileSync(path.join(SRC, file), 'utf8')
    .split('\n')
    .flatMap((line, index) => (line.includes(DOMAIN) ? [`${file}:${index + 1}: ${line.trim()}`] : []));
}

describe('the names of the Sandbox API', () => {
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((name) => path.extname(name) !== '');

  it(`are spelled in src/${HOME} and in no other file of src/`, () => {
    expect(files).toContain(HOME);
    expect(files.filter((file) => file !== HOME).flatMap(spellings)).toEqual([]);
  });

  it('are found where they are spelled (the scan reads what the files hold)', () => {
    expect(spellings(HOME).length).toBeGreaterThan(10);
  });
});
