/**
 * docs/server.md's flags tables say what `serve` takes: one row per option, with its env var and its default,
 * and no row for an option that does not exist; docs/deliver-env.md's, what `deliver-env` takes; docs/cli.md's
 * preflight section, what `preflight` takes. The rows beside each command (src/cli/serve/option-rows.ts,
 * src/cli/deliver-env/options.ts, src/cli/preflight/options.ts) are the truth.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DELIVER_OPTION_ROWS } from '../../src/cli/deliver-env/options.js';
import { PREFLIGHT_OPTION_ROWS } from '../../src/cli/preflight/options.js';
import { SERVE_OPTION_ROWS } from '../../src/cli/serve/option-rows.js';
import type { OptionRows } from '../../src/options/option-row.js';
import { cells, tableRows, unquote } from './markdown-table.js';

const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SECTION = '## Flags and environment';
const HEADER = ['flag', 'environment', 'default', 'meaning'];

interface DocumentedOption {
  flag: string;
  env: string;
  default: string;
}

/** Every row of every flags table in the section, cells as written. */
function documentedRows(file: string, section: string): string[][] {
  const text = readFileSync(`${PACKAGE_ROOT}docs/${file}`, 'utf8');
  const start = text.indexOf(`\n${section}\n`);
  if (start < 0) throw new Error(`docs/${file} has no "${section}" section`);
  const end = text.indexOf('\n## ', start + 1);
  const lines = text.slice(start, end < 0 ? undefined : end).split('\n');
  const rows: string[][] = [];
  let inFlagsTable = false;
  for (const line of lines) {
    if (!line.startsWith('|')) {
      inFlagsTable = false;
      continue;
    }
    const row = cells(line);
    if (row.every((cell) => /^-+$/.test(cell))) continue;
    if (!inFlagsTable) {
      // A table's first line is its header; only tables headed like the flags table are read.
      inFlagsTable = HEADER.every((name, i) => row[i] === name);
      continue;
    }
    rows.push(row);
  }
  return rows;
}

function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');
}

/**
 * A cell holding exactly one code span stands for that span; anything else stays as written, so a cell that
 * names two flags, or an env var only in part (`…_CONFIG_NAME`), shows up as itself in the diff.
 */
function single(cell: string): string {
  const spans = codeSpans(cell);
  return spans.length === 1 && cell === `\`${spans[0]}\`` ? (spans[0] ?? cell) : cell;
}

/**
 * The default cell's code spans, joined by commas (a list default is written one span per item); a cell
 * with no span must start with "none". Prose around the spans is free.
 */
function documentedDefault(cell: string): string {
  const spans = codeSpans(cell);
  if (spans.length > 0) return spans.join(',');
  return cell.startsWith('none') ? 'none' : cell;
}

/** As the docs write a default: a path inside the package relative to it, since the install decides the rest. */
function expectedDefault(value: string | number | boolean | undefined): string {
  if (value === undefined) return 'none';
  const shown = String(value);
  return isAbsolute(shown) && shown.startsWith(PACKAGE_ROOT) ? relative(PACKAGE_ROOT, shown) : shown;
}

const byFlag = (a: DocumentedOption, b: DocumentedOption): number => a.flag.localeCompare(b.flag);

for (const [file, rows, section] of [
  ['server.md', SERVE_OPTION_ROWS, SECTION],
  ['deliver-env.md', DELIVER_OPTION_ROWS, SECTION],
  ['cli.md', PREFLIGHT_OPTION_ROWS, '## Check a cluster: preflight'],
] as const) {
  describe(`docs/${file} flags tables`, () => {
    const documented: DocumentedOption[] = documentedRows(file, section)
      .map(([flag = '', env = '', fallback = '']) => ({
        flag: single(flag),
        env: single(env),
        default: documentedDefault(fallback),
      }))
      .sort(byFlag);
    const options: DocumentedOption[] = Object.values(
      rows as Record<string, { flag: string; env: string; default: unknown }>,
    )
      .map((row) => ({
        flag: `--${row.flag}`,
        env: row.env,
        default: expectedDefault(row.default as string | number | boolean | undefined),
      }))
      .sort(byFlag);

    it('has one row per option, and no row that is not an option', () => {
      expect(documented.map((row) => row.flag)).toEqual(options.map((option) => option.flag));
    });

    it("gives each option's env var and default as the code has them", () => {
      // Rows missing or extra are the test above's to report; here each row is compared with its option.
      const flags = new Set(options.map((option) => option.flag));
      const documentedFlags = new Set(documented.map((row) => row.flag));
      expect(documented.filter((row) => flags.has(row.flag))).toEqual(
        options.filter((option) => documentedFlags.has(option.flag)),
      );
    });
  });
}

describe('docs/cli.md durations', () => {
  it('lists every flag the durations renamed, with its new name and command, and no other', () => {
    const commands: [string, OptionRows][] = [
      ['serve', SERVE_OPTION_ROWS],
      ['deliver-env', DELIVER_OPTION_ROWS],
    ];
    const renamed = commands.flatMap(([command, rows]) =>
      Object.values(rows).flatMap((row) =>
        row.formerly === undefined ? [] : [[`--${row.formerly.flag}`, `--${row.flag}`, command]],
      ),
    );
    expect(tableRows('cli.md', 'old flag').map((row) => row.map(unquote))).toEqual(renamed);
  });
});
