import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { deepFreezeObjects, flatJoin, spliceAscii } from '../../src/json/fast-json.js';

v8.setFlagsFromString('--allow-natives-syntax');
// Compiled after the flag is set, so V8 reads the intrinsic in it; only source compiled at run time can. A rope
// that nothing has flattened yet is not flat; a flattened one is, though it stays a rope.
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const isFlat = new Function('s', 'return %StringIsFlat(s)') as (s: string) => boolean;

describe('flatJoin', () => {
  it('tells a rope from a flat string (the check itself)', () => {
    const [a, b] = ['/var/sandbox', 'run_with_envs.sh'];
    expect(isFlat(`${a}/${b}`)).toBe(false);
    expect(isFlat('/var/sandbox/run_with_envs.sh')).toBe(true);
  });

  it('joins its parts into one flat string', () => {
    const [a, b] = ['/spec/containers/11', 'livenessProbe'];
    const joined = flatJoin([a, b], '/');
    expect(joined).toBe('/spec/containers/11/livenessProbe');
    expect(isFlat(joined)).toBe(true);
    expect(flatJoin([a, '/b'])).toBe('/spec/containers/11/b');
    expect(flatJoin([])).toBe('');
  });
});

describe('deepFreezeObjects', () => {
  it('freezes every object all the way down, inside arrays too, and no array', () => {
    const value = { list: [{ name: 'a', args: ['x'] }], nested: { deeper: { n: 1 } } };
    expect(deepFreezeObjects(value)).toBe(value);
    expect(Object.isFrozen(value)).toBe(true);
    expect(Object.isFrozen(value.nested.deeper)).toBe(true);
    expect(Object.isFrozen(value.list[0])).toBe(true);
    expect(Object.isFrozen(value.list)).toBe(false);
    expect(Object.isFrozen(value.list[0]?.args)).toBe(false);
  });

  it('takes values that are not objects as they are', () => {
    for (const value of [null, undefined, 0, 'text', true]) expect(deepFreezeObjects(value)).toBe(value);
  });
});

describe('spliceAscii', () => {
  it.each([
    ['{"uid":"u","patch":"', 'W3sib3AiOiJhZGQifV0=', '"}'],
    ['{"uid":"ü-€-😀","patch":"', 'W10=', '"}}'],
    ['', '', ''],
  ])('is the UTF-8 of the three strings in order (%j)', (head, ascii, tail) => {
    const bytes = spliceAscii(head, ascii, tail);
    expect(bytes.equals(Buffer.from(`${head}${ascii}${tail}`, 'utf8'))).toBe(true);
  });
});
