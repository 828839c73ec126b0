/**
 * Where the repository is, whichever copy of this module runs: the build's (dist/harness/) or the source, as the
 * tests import it. Every file the bench and the soak read, and the product they start, is named from here.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The nearest folder above this module that holds a package.json: the repository's root. */
function repositoryRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json in any folder above ${here}`);
  }
}

export const ROOT = repositoryRoot();

/** A file of the repository, by its path from the root. */
export function repoPath(...parts: string[]): string {
  return path.join(ROOT, ...parts);
}

/** The product's own build (`npm run build`), as `npm start` runs it: every server the harnesses start is this. */
export const CLI = repoPath('dist/cli/main.js');

/** What `git ARGS` prints in the repository, trailing newlines cut; undefined outside a checkout or on failure. */
export function git(...args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trimEnd();
  } catch {
    return undefined;
  }
}
