import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unifiedDiff } from '../../../src/cli/explain/line-diff.js';
import { propertyRuns } from '../../support/property-runs.js';

const LABELS = { from: 'before', to: 'after' };

/** Applies a unified diff to `before` the way `patch` does, checking every context and removed line. */
function applyUnified(before: string, diff: string): string {
  const source = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let at = 0;
  const lines = diff === '' ? [] : diff.replace(/\n$/, '').split('\n').slice(2);
  for (const line of lines) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(line);
    if (header !== null) {
      const count = header[2] === undefined ? 1 : Number(header[2]);
      const start = count === 0 ? Number(header[1]) : Number(header[1]) - 1;
      while (at < start) out.push(source[at++] ?? '');
      continue;
    }
    const body = line.slice(1);
    if (line.startsWith('+')) out.push(body);
    else {
      if (source[at] !== body)
        throw new Error(`line ${at + 1} is ${JSON.stringify(source[at])}, the diff says ${JSON.stringify(body)}`);
      if (line.startsWith(' ')) out.push(body);
      at += 1;
    }
  }
  while (at < source.length) out.push(source[at++] ?? '');
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}

/** The fewest added plus removed lines, from the longest common subsequence. */
function minimalEdits(a: string[], b: string[]): number {
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      const row = lcs[i] ?? [];
      row[j] = a[i] === b[j] ? (lcs[i + 1]?.[j + 1] ?? 0) + 1 : Math.max(lcs[i + 1]?.[j] ?? 0, row[j + 1] ?? 0);
    }
  }
  return a.length + b.length - 2 * (lcs[0]?.[0] ?? 0);
}

const text = (lines: string[]): string => (lines.length === 0 ? '' : `${lines.join('\n')}\n`);

describe('unifiedDiff', () => {
  it('prints hunks as diff -u does, three lines of context, a gap of more than six lines splitting them', () => {
    const before = text(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l']);
    const after = text(['a', 'B', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm']);
    expect(unifiedDiff(before, after, LABELS)).toBe(
      [
        '--- before',
        '+++ after',
        '@@ -1,5 +1,5 @@',
        ' a',
        '-b',
        '+B',
        ' c',
        ' d',
        ' e',
        '@@ -10,3 +10,4 @@',
        ' j',
        ' k',
        ' l',
        '+m',
        '',
      ].join('\n'),
    );
  });

  it('joins changes whose contexts touch into one hunk', () => {
    const before = text(['1', '2', '3', '4', '5', '6', '7', '8']);
    const after = text(['1', 'two', '3', '4', '5', '6', '7', 'eight']);
    expect(unifiedDiff(before, after, LABELS).match(/^@@/gm)).toHaveLength(1);
  });

  it('numbers an insertion into an empty text as diff does', () => {
    expect(unifiedDiff('', text(['x', 'y']), LABELS)).toBe('--- before\n+++ after\n@@ -0,0 +1,2 @@\n+x\n+y\n');
  });

  it('is empty for equal texts', () => {
    expect(unifiedDiff(text(['a', 'b']), text(['a', 'b']), LABELS)).toBe('');
  });

  it('gives a diff that turns before into after, with the fewest changed lines', () => {
    const lines = fc.array(fc.constantFrom('a', 'b', 'c', 'd', '- x', ''), { maxLength: 14 });
    fc.assert(
      fc.property(lines, lines, (a, b) => {
        const diff = unifiedDiff(text(a), text(b), LABELS);
        expect(applyUnified(text(a), diff)).toBe(text(b));
        const changed = diff
          .split('\n')
          .slice(2)
          .filter((line) => line.startsWith('-') || line.startsWith('+')).length;
        expect(changed).toBe(minimalEdits(a, b));
      }),
      { numRuns: propertyRuns(2000) },
    );
  });
});
