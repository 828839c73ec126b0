import { describe, expect, it } from 'vitest';
import { randomHex } from '../../../src/deliver/envd/random-hex.js';

describe('randomHex', () => {
  it('gives 2 * bytes lowercase hex digits', () => {
    for (const bytes of [1, 8, 16, 4096]) expect(randomHex(bytes)).toMatch(new RegExp(`^[0-9a-f]{${2 * bytes}}$`));
  });

  it('never gives the same name twice, across many refills of its block', () => {
    const seen = new Set<string>();
    // 8 + 16 bytes a round, as a delivery draws them: 20,000 rounds use the block about 117 times over.
    for (let i = 0; i < 20_000; i += 1) {
      seen.add(randomHex(8));
      seen.add(randomHex(16));
    }
    expect(seen.size).toBe(40_000);
  });

  it('draws new bytes for each refill, not the block it had', () => {
    const first = randomHex(4096);
    expect(randomHex(4096)).not.toBe(first);
  });

  it('refuses a size it cannot give', () => {
    for (const bytes of [0, -1, 1.5, 4097, Number.NaN]) expect(() => randomHex(bytes)).toThrow(RangeError);
  });
});
