/**
 * The size a reader takes on, printed on every run and held to its budget (docs/layout.md, "Where text goes"):
 * the six pages a user reads to install Auto together, and all the docs together. Words are counted as `wc -w`
 * counts them, code and tables included: a reader scrolls past those too. A budget is a guide to the size of the
 * docs, not a cap to split files by; what a user does not need (measurement runs, test internals, history) lives
 * in the bench's output, the tests and git.
 *
 * Beside the sizes, what no user page may hold: dated history (a date, an issue number or a commit in prose).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART_READMES = readdirSync(`${ROOT}charts`).map((chart) => `charts/${chart}/README.md`);

/** What a platform engineer reads to install the webhook and deliver-env for Auto. */
const INSTALL_PAGES = [
  'README.md',
  'docs/install.md',
  'docs/deliver-env.md',
  'docs/env-file.md',
  'docs/policy.md',
  ...CHART_READMES,
];
const ALL_PAGES = [
  'README.md',
  ...readdirSync(`${ROOT}docs`)
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  ...CHART_READMES,
];

const INSTALL_BUDGET = 12_000;
const ALL_BUDGET = 25_000;

function wordCount(text: string): number {
  return text.split(/\s+/).filter((word) => word !== '').length;
}

const words = new Map(ALL_PAGES.map((page) => [page, wordCount(readFileSync(`${ROOT}${page}`, 'utf8'))]));
const total = (pages: readonly string[]): number => pages.reduce((sum, page) => sum + (words.get(page) ?? 0), 0);

describe('the size of the docs', () => {
  it('prints the words of each page', () => {
    const width = Math.max(...ALL_PAGES.map((page) => page.length));
    const rows = [...words]
      .sort(([, a], [, b]) => b - a)
      .map(([page, n]) => `${page.padEnd(width)} ${String(n).padStart(6)}`);
    console.log(
      [
        ...rows,
        `${'the six install pages'.padEnd(width)} ${String(total(INSTALL_PAGES)).padStart(6)} (budget ${INSTALL_BUDGET})`,
        `${'all of them'.padEnd(width)} ${String(total(ALL_PAGES)).padStart(6)} (budget ${ALL_BUDGET})`,
      ].join('\n'),
    );
    expect(words.size).toBe(ALL_PAGES.length);
  });

  it(`keeps the six pages a user reads to install Auto within ${INSTALL_BUDGET} words`, () => {
    expect(INSTALL_PAGES.every((page) => words.has(page))).toBe(true);
    expect(total(INSTALL_PAGES)).toBeLessThanOrEqual(INSTALL_BUDGET);
  });

  it(`keeps docs/, the README and the chart README within ${ALL_BUDGET} words`, () => {
    expect(total(ALL_PAGES)).toBeLessThanOrEqual(ALL_BUDGET);
  });
});

/** Prose only: code blocks and spans may show a date or a digest as output does. */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** A date, an issue or pull request number, or a commit: the marks of a diary. */
const HISTORY = [
  /\b20\d\d-\d\d-\d\d\b/,
  /\b(issue|PR|pull request) #?\d+/i,
  /\bcommits? [0-9a-f]{7,40}\b/,
  /\bat commit\b/,
];

describe('the docs as a reference', () => {
  it.each(ALL_PAGES)('%s holds no dated history', (page) => {
    const text = prose(readFileSync(`${ROOT}${page}`, 'utf8'));
    const lines = text.split('\n').filter((line) => HISTORY.some((mark) => mark.test(line)));
    expect(lines).toEqual([]);
  });
});
