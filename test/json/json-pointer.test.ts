import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapePointer, unescapePointer } from '../../src/json/json-pointer.js';

describe('JSON pointer tokens', () => {
  it.each([
    ['plain', 'plain'],
    ['a/b', 'a~1b'],
    ['a~b', 'a~0b'],
    ['~1', '~01'],
    ['/~', '~1~0'],
  ])('escapes %j as %j and back', (key, token) => {
    expect(escapePointer(key)).toBe(token);
    expect(unescapePointer(token)).toBe(key);
  });

  it('gives back every key it escaped', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', '~', '/', '0', '1') }),
        (key) => unescapePointer(escapePointer(key)) === key,
      ),
    );
  });
});
