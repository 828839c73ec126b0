import { describe, expect, it } from 'vitest';
import { goString, marshalLikeGo } from '../../src/kube-shapes/go-json.js';

// Each expected text is what Go's json.Marshal writes for the same value (checked against Go's encoding/json).
describe('goString: a string as Go writes it', () => {
  it.each([
    ['plain text as it is', 'plain /path?x=1', '"plain /path?x=1"'],
    ['<, > and & escaped for HTML', 'a<b>&c', '"a\\u003cb\\u003e\\u0026c"'],
    ['U+2028 and U+2029 escaped', '\u2028x\u2029', '"\\u2028x\\u2029"'],
    [
      'control characters short where JSON has a short form, else \\u00xx in lower case; DEL as it is',
      '\u0000\u0001\b\f\n\r\t\u001f\u007f',
      '"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\u007f"',
    ],
    ['quote and backslash escaped, slash not', '"\\/', '"\\"\\\\/"'],
    ['other characters as they are, pairs of surrogates included', 'é😀', '"é😀"'],
    ['a lone surrogate as U+FFFD, as Go decoded it', '\ud800z\udc00', '"\ufffdz\ufffd"'],
  ])('%s', (_, text, expected) => {
    expect(goString(text)).toBe(expected);
  });
});

describe('marshalLikeGo', () => {
  it("writes a Map as a Go map: keys in their UTF-8 bytes' order, not UTF-16's", () => {
    const map = new Map<string, number>([
      ['b', 1],
      ['B', 2],
      ['a', 3],
      ['é', 4],
      ['😀', 5],
      ['\uffff', 6],
      ['', 7],
    ]);
    expect(marshalLikeGo(map)).toBe('{"":7,"B":2,"a":3,"b":1,"é":4,"\uffff":6,"😀":5}');
  });

  it('writes a plain object as a struct: its keys in order, undefined ones left out, null written', () => {
    expect(marshalLikeGo({ z: 1, a: undefined, m: null, list: ['<', true, 0] })).toBe(
      '{"z":1,"m":null,"list":["\\u003c",true,0]}',
    );
  });

  it('escapes keys as it escapes values', () => {
    expect(marshalLikeGo(new Map([['/app-health/a&b/readyz', {}]]))).toBe('{"/app-health/a\\u0026b/readyz":{}}');
  });
});
