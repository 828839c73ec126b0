/**
 * What the fuzzer draws from: a seeded random source, so a case is made again from its number and the seed, and
 * the values it puts into reviews: a wrong type for every JSON type, runtime names, policies, odd strings,
 * content types, and random JSON.
 */
import { DELETE, type Replacement } from './json-paths.js';
import type { Json, JsonObject } from './reviews.js';

export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** mulberry32: small, fast and good enough to spread cases; reproducibility is what matters here. */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.state ^ (this.state >>> 15), 1 | this.state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  int(below: number): number {
    return Math.floor(this.next() * below);
  }

  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }
}

/** Every JSON type, and absence: at each path at least one of them is the wrong one. */
export const WRONG_TYPES: readonly Replacement[] = [
  DELETE,
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  2 ** 53 + 1,
  '',
  'x',
  '__proto__',
  [],
  [null],
  {},
  { '': 1 },
];

export const RUNTIME_NAMES = [
  'agent-runtime',
  'csi',
  'traffic-proxy',
  'no-such-runtime',
  '',
  ' csi ',
  'AGENT-RUNTIME',
  '__proto__',
];
export const POLICIES = ['Auto', 'None', 'auto', '', 'Auto ', 'Manual', '__proto__', 'constructor'];
export const WEIRD_STRINGS = [
  '\ud800',
  '\udfff',
  '\u0000',
  '\u202e',
  'e\u0301',
  '\ufeff',
  'a\u2028b',
  '😀'.repeat(64),
  '\\',
  '"',
  '~1/~0',
];
export const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/JSON',
  'application/json;;',
  'application/jsonx',
  'application/merge-patch+json',
  '*/*',
  'application/json, text/plain',
  `application/${'j'.repeat(1000)}`,
  '',
];

export function randomJson(rng: Rng, depth: number): Json {
  const kind = rng.int(depth <= 0 ? 5 : 7);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.int(2) === 0;
    case 2:
      return rng.pick([0, -1, 1.5, 1e308, -1e-308, 2 ** 31, 2 ** 53]);
    case 3:
      return rng.pick(['', 'main', 'agent-runtime', 'Auto', '/mnt/envd', 'x'.repeat(300), ...WEIRD_STRINGS]);
    case 4:
      return rng.pick(['a', 'b', 'c']);
    case 5:
      return Array.from({ length: rng.int(4) }, () => randomJson(rng, depth - 1));
    default: {
      const object: JsonObject = {};
      for (let i = rng.int(4); i > 0; i -= 1)
        object[rng.pick(['name', 'image', 'command', 'exec', 'x', 'env', 'value'])] = randomJson(rng, depth - 1);
      return object;
    }
  }
}
