/**
 * Every link and anchor of the docs, the READMEs, CONTRIBUTING.md, the chart and the manifests resolves, and so
 * does every docs section a comment of the code names (test/docs/link-check.ts says what a pointer is).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { brokenPointers, type Repo } from './link-check.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0')
  .filter((name) => name !== '');

/** The texts people follow pointers from: prose, manifests, the chart, and the code's comments. */
const SCANNED =
  /^(README\.md|CONTRIBUTING\.md|docs\/.+\.md|manifests\/.+|charts\/.+|examples\/.+|(src|test|bench|soak|harness|scripts)\/.+\.(ts|sh|yaml|json|md))$/;
// The shared conformance cases are copies kept as written, and point nowhere; the checker's own source shows
// what a pointer looks like with made-up ones.
const NOT_SCANNED = /^(test\/fixtures\/|test\/docs\/link-check\.ts$)/;

const repo: Repo = {
  kind(path) {
    try {
      const stat = statSync(`${ROOT}${path}`);
      return stat.isDirectory() ? 'dir' : 'file';
    } catch {
      return undefined;
    }
  },
  text: (path) => readFileSync(`${ROOT}${path}`, 'utf8'),
};

describe('pointers between the texts of the repository', () => {
  const files = tracked.filter((name) => SCANNED.test(name) && !NOT_SCANNED.test(name));

  it('scans the docs, the READMEs, the chart and the manifests', () => {
    for (const expected of ['README.md', 'docs/install.md', 'charts/sandbox-injector/README.md', 'CONTRIBUTING.md'])
      expect(files).toContain(expected);
    expect(files.filter((name) => name.startsWith('manifests/')).length).toBeGreaterThan(10);
  });

  it('all resolve: files, anchors and named sections', () => {
    const broken = brokenPointers(repo, files).map((b) => `${b.file}:${b.line}: ${b.pointer}: ${b.problem}`);
    expect(broken).toEqual([]);
  });
});
