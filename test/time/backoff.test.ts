import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/time/backoff.js';

describe('backoffDelay', () => {
  const settings = { minMs: 100, maxMs: 1000 };

  it('doubles from the minimum, is capped, and jitters within the upper half', () => {
    expect([1, 2, 3, 4, 5, 40].map((n) => backoffDelay(n, settings, () => 1))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect([1, 2, 5].map((n) => backoffDelay(n, settings, () => 0))).toEqual([50, 100, 500]);
  });

  it('never waits zero, and stays finite however many failures came', () => {
    expect(backoffDelay(1, settings, () => 0)).toBeGreaterThan(0);
    expect(backoffDelay(0, settings, () => 1)).toBe(100);
    expect(backoffDelay(Number.MAX_SAFE_INTEGER, settings, () => 1)).toBe(1000);
  });
});

describe('the one backoff', () => {
  it('is time/backoff.ts: no other module of src/ doubles a wait of its own', () => {
    const src = fileURLToPath(new URL('../../src/', import.meta.url));
    const doubling = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts') && name !== 'time/backoff.ts')
      .filter((name) => /\b2 \*\* |Math\.pow\(2,/.test(readFileSync(`${src}${name}`, 'utf8')));
    expect(doubling).toEqual([]);
  });
});
