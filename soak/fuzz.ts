/**
 * Fuzzed requests, each made from its number and the run's seed alone, so any case a run reports can be made
 * again (`caseAt(n)` with the same SOAK_SEED). Every other case, until it is done, sweeps every path of every
 * seed with every wrong type; the rest draw a mutation family by weight: bytes and bits flipped, truncation,
 * deep nesting, huge strings, prototype keys, bad content types, chunked bodies and sizes at the body limit. The
 * values they draw from are fuzz-values.ts's; the edits by path, json-paths.ts's.
 */
import type { RequestSpec } from './http.js';
import { CONTENT_TYPES, POLICIES, randomJson, Rng, RUNTIME_NAMES, WEIRD_STRINGS, WRONG_TYPES } from './fuzz-values.js';
import {
  getAt,
  insertKey,
  pathsOf,
  PLACEHOLDER,
  QUOTED_PLACEHOLDER,
  setAt,
  splitOnce,
  type Path,
  type Replacement,
} from './json-paths.js';
import type { Json, JsonObject, Seed } from './reviews.js';

export interface FuzzCase {
  n: number;
  kind: string;
  spec: RequestSpec;
  /** Larger than the server takes: a connection closed before the answer is the expected refusal, not a loss. */
  oversize: boolean;
  /** Expensive to send or to parse: at most one such case is in flight, so they test the server, not its caps. */
  heavy: boolean;
  limit?: 'below' | 'at' | 'above';
}

const JSON_HEADERS = { 'content-type': 'application/json' };

interface PreparedSeed extends Seed {
  paths: Path[];
  objectPaths: Path[];
  stringPaths: Path[];
}

export class Fuzzer {
  private readonly seeds: PreparedSeed[];
  readonly sweepSize: number;
  private readonly families: [string, number, (rng: Rng, n: number) => Omit<FuzzCase, 'n' | 'kind'>][];
  private readonly totalWeight: number;

  constructor(
    seeds: readonly Seed[],
    private readonly seed: number,
    private readonly bodyLimit: number,
  ) {
    this.seeds = seeds.map((s) => ({ ...s, ...pathsOf(s.review) }));
    this.sweepSize = this.seeds.reduce((sum, s) => sum + s.paths.length, 0) * WRONG_TYPES.length;
    this.families = [
      ['valid', 6, (rng, n) => this.plain(this.base(rng, n).value)],
      ['semantic', 12, (rng, n) => this.plain(this.semantic(rng, n))],
      ['wrong-type', 10, (rng, n) => this.wrongType(rng, n)],
      ['byte-flip', 14, (rng, n) => this.flip(rng, n, 'byte')],
      ['bit-flip', 14, (rng, n) => this.flip(rng, n, 'bit')],
      ['truncate', 10, (rng, n) => this.truncate(rng, n)],
      ['proto-key', 6, (rng, n) => this.protoKey(rng, n)],
      ['duplicate-key', 3, (rng, n) => this.duplicateKey(rng, n)],
      ['unicode', 3, (rng, n) => this.unicode(rng, n)],
      ['empty', 1, (rng) => this.empty(rng)],
      ['content-type', 5, (rng, n) => this.contentType(rng, n)],
      ['chunked', 5, (rng, n) => this.chunked(rng, n)],
      ['http', 3, (rng, n) => this.http(rng, n)],
      ['deep', 0.6, (rng, n) => this.deep(rng, n)],
      ['wide', 0.1, (rng, n) => this.wide(rng, n)],
      ['huge-string', 0.12, (rng, n) => this.hugeString(rng, n)],
      ['limit', 0.03, (rng, n) => this.atLimit(rng, n)],
    ];
    this.totalWeight = this.families.reduce((sum, [, weight]) => sum + weight, 0);
  }

  caseAt(n: number): FuzzCase {
    const rng = new Rng(Math.imul(this.seed, 0x9e3779b1) ^ Math.imul(n, 0x85ebca6b));
    rng.next();
    // Even cases sweep until the sweep is done, so a short run covers both halves.
    if (n % 2 === 0 && n / 2 < this.sweepSize) return { n, kind: 'wrong-type-sweep', ...this.sweepCase(n / 2) };
    let roll = rng.next() * this.totalWeight;
    for (const [kind, weight, make] of this.families) {
      roll -= weight;
      if (roll < 0) return { n, kind, ...make(rng, n) };
    }
    return { n, kind: 'valid', ...this.plain(this.base(rng, n).value) };
  }

  private sweepCase(n: number): Omit<FuzzCase, 'n' | 'kind'> {
    let index = Math.floor(n / WRONG_TYPES.length);
    const replacement = WRONG_TYPES[n % WRONG_TYPES.length] as Replacement;
    for (const seed of this.seeds) {
      if (index < seed.paths.length) {
        const value = withUid(seed.review, n);
        return this.plain(setAt(value, seed.paths[index] as Path, replacement));
      }
      index -= seed.paths.length;
    }
    throw new Error(`sweep case ${n} out of range`);
  }

  private base(rng: Rng, n: number): { seed: PreparedSeed; value: JsonObject } {
    const seed = rng.pick(this.seeds);
    return { seed, value: withUid(seed.review, n) };
  }

  private plain(value: Json): Omit<FuzzCase, 'n' | 'kind'> {
    return { spec: post(JSON.stringify(value)), oversize: false, heavy: false };
  }

  private semantic(rng: Rng, n: number): Json {
    const { seed, value } = this.base(rng, n);
    const request = value.request as JsonObject;
    const pod = (request.object ?? {}) as JsonObject;
    const metadata = (pod.metadata ?? {}) as JsonObject;
    const annotations = { ...((metadata.annotations ?? {}) as JsonObject) };
    const spec = (pod.spec ?? {}) as JsonObject;
    const containers = Array.isArray(spec.containers) ? spec.containers : [];
    const withPod = (next: JsonObject): JsonObject => ({ ...value, request: { ...request, object: next } });
    switch (rng.int(9)) {
      case 0: {
        const names = Array.from({ length: 1 + rng.int(4) }, () => rng.pick(RUNTIME_NAMES));
        annotations['agents.kruise.io/runtimes'] = names.join(rng.pick([',', ', ', ',,']));
        return withPod({ ...pod, metadata: { ...metadata, annotations } });
      }
      case 1:
        annotations['agents.kruise.io/env-vars-injection-policy'] = rng.pick(POLICIES);
        return withPod({ ...pod, metadata: { ...metadata, annotations } });
      case 2: {
        const copies = rng.pick([2, 5, 50, 200]);
        const many = Array.from({ length: copies }, (_, i) =>
          containers.map((c) => (rng.int(2) === 0 ? c : { ...(c as JsonObject), name: `c${i}` })),
        ).flat();
        return withPod({ ...pod, spec: { ...spec, containers: many } });
      }
      case 3:
        annotations['agents.kruise.io/runtime-injection-status'] = rng.pick([
          '{',
          '[]',
          'null',
          '{"injected":"agent-runtime"}',
          '{"injected":["agent-runtime"],"present":[{}],"skipped":[null]}',
          '{"wrapped":["main","main"],"skipped":[{"runtime":"csi","reason":"x","message":"y"}]}',
          JSON.stringify(randomJson(rng, 3)),
        ]);
        return withPod({ ...pod, metadata: { ...metadata, annotations } });
      case 4:
        return {
          ...value,
          request: { ...request, operation: rng.pick(['UPDATE', 'DELETE', 'CONNECT', '', 'create']) },
        };
      case 5:
        return { ...value, request: { ...request, uid: rng.pick(['', 'x'.repeat(10_000), '\u0000', '😀', ' uid ']) } };
      case 6:
        return {
          ...value,
          request: {
            ...request,
            dryRun: true,
            kind: { group: '', version: 'v1', kind: rng.pick(['Pod', 'Deployment', '']) },
          },
        };
      case 7: {
        const other = rng.pick(this.seeds);
        return {
          ...value,
          request: { ...request, object: (other.review.request as JsonObject).object ?? null, oldObject: pod },
        };
      }
      default: {
        const path = rng.pick(seed.paths);
        return setAt(value, path, randomJson(rng, 3));
      }
    }
  }

  private wrongType(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const { seed, value } = this.base(rng, n);
    return this.plain(setAt(value, rng.pick(seed.paths), rng.pick(WRONG_TYPES)));
  }

  private flip(rng: Rng, n: number, unit: 'byte' | 'bit'): Omit<FuzzCase, 'n' | 'kind'> {
    const body = Buffer.from(JSON.stringify(this.base(rng, n).value));
    const flips = 1 + rng.int(8);
    for (let i = 0; i < flips; i += 1) {
      const at = rng.int(body.length);
      body[at] = unit === 'byte' ? rng.int(256) : (body[at] ?? 0) ^ (1 << rng.int(8));
    }
    return { spec: post(body), oversize: false, heavy: false };
  }

  private truncate(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const text = JSON.stringify(this.base(rng, n).value);
    return { spec: post(text.slice(0, rng.int(text.length))), oversize: false, heavy: false };
  }

  private protoKey(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const { seed, value } = this.base(rng, n);
    const key = rng.pick(['__proto__', 'constructor', 'prototype', '__proto__ ', 'constructor.prototype']);
    const inner = rng.pick<Json>([{}, { prototype: { polluted: true } }, { polluted: 1 }, 'x', null, [{ __proto: 1 }]]);
    return { spec: post(insertKey(value, rng.pick(seed.objectPaths), key, inner)), oversize: false, heavy: false };
  }

  private duplicateKey(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const { seed, value } = this.base(rng, n);
    const path = rng.pick(seed.objectPaths);
    const target = getAt(value, path) as JsonObject;
    const keys = Object.keys(target);
    const key = keys.length === 0 ? 'uid' : rng.pick(keys);
    return { spec: post(insertKey(value, path, key, randomJson(rng, 2))), oversize: false, heavy: false };
  }

  private unicode(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const { seed, value } = this.base(rng, n);
    switch (rng.int(3)) {
      case 0:
        return this.plain(setAt(value, rng.pick(seed.stringPaths), rng.pick(WEIRD_STRINGS)));
      case 1:
        return {
          spec: post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(value))])),
          oversize: false,
          heavy: false,
        };
      default: {
        // Invalid UTF-8 inside a string: an overlong encoding, a lone continuation byte, a truncated sequence.
        const text = JSON.stringify(setAt(value, rng.pick(seed.stringPaths), PLACEHOLDER));
        const [before, after] = splitOnce(text, QUOTED_PLACEHOLDER);
        const bad = Buffer.from(
          rng.pick([[0xc0, 0xaf], [0x80], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xed, 0xa0, 0x80]]),
        );
        return {
          spec: post(Buffer.concat([Buffer.from(`${before}"`), bad, Buffer.from(`"${after}`)])),
          oversize: false,
          heavy: false,
        };
      }
    }
  }

  private empty(rng: Rng): Omit<FuzzCase, 'n' | 'kind'> {
    return {
      spec: post(
        rng.pick(['', ' ', '\n', 'null', '[]', '""', '{}', '0', 'true', '{"request":null}', '{"request":{}}']),
      ),
      oversize: false,
      heavy: false,
    };
  }

  private contentType(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const type = rng.pick(CONTENT_TYPES);
    const headers: Record<string, string> = type === '' ? {} : { 'content-type': type };
    return {
      spec: { method: 'POST', path: '/mutate', headers, body: JSON.stringify(this.base(rng, n).value) },
      oversize: false,
      heavy: false,
    };
  }

  private chunked(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const value = rng.int(2) === 0 ? this.base(rng, n).value : this.semantic(rng, n);
    const body = JSON.stringify(value);
    return { spec: { ...post(body), chunks: rng.pick([2, 3, 7, 64, body.length]) }, oversize: false, heavy: false };
  }

  private http(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const body = JSON.stringify(this.base(rng, n).value);
    switch (rng.int(5)) {
      case 0: {
        const method = rng.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']);
        return {
          spec: {
            method,
            path: '/mutate',
            headers: JSON_HEADERS,
            body: method === 'HEAD' || method === 'GET' ? undefined : body,
          },
          oversize: false,
          heavy: false,
        };
      }
      case 1: {
        const path = rng.pick([
          '/mutate/',
          '/MUTATE',
          '/mutate?x=1&x=2',
          '//mutate',
          '/mutate%00',
          '/../mutate',
          '/healthz',
          '/readyz',
          '/metrics',
          '/',
          '/mutate#x',
          `/${'a'.repeat(8_000)}`,
        ]);
        return { spec: { ...post(body), path }, oversize: false, heavy: false };
      }
      case 2:
        // Past Node's 16 KiB header limit: a 431 or a closed connection.
        return { spec: { ...post(body), path: `/mutate?${'q'.repeat(20_000)}` }, oversize: true, heavy: false };
      case 3: {
        const headers: Record<string, string> = { ...JSON_HEADERS };
        for (let i = 0; i < 100; i += 1) headers[`x-soak-${i}`] = String(i);
        return { spec: { ...post(body), headers }, oversize: false, heavy: false };
      }
      default:
        return {
          spec: { ...post(body), headers: { ...JSON_HEADERS, 'x-soak-big': 'h'.repeat(20_000) } },
          oversize: true,
          heavy: false,
        };
    }
  }

  private deep(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const { seed, value } = this.base(rng, n);
    const depth = rng.pick([1_000, 1_000, 1_000, 10_000, 10_000, 100_000]);
    const nested = rng.pick([
      () => '['.repeat(depth) + ']'.repeat(depth),
      () => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth),
      () => '[{"a":'.repeat(depth / 2) + 'null' + '}]'.repeat(depth / 2),
      () => '['.repeat(depth),
    ])();
    const text = JSON.stringify(setAt(value, rng.pick(seed.paths), PLACEHOLDER));
    return { spec: post(text.replace(QUOTED_PLACEHOLDER, () => nested)), oversize: false, heavy: depth >= 10_000 };
  }

  private wide(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const { value } = this.base(rng, n);
    const count = rng.pick([1_000, 10_000, 100_000]);
    const wide: JsonObject = {};
    for (let i = 0; i < count; i += 1) wide[`k${i}`] = 'v';
    const where = rng.pick<Path>([
      ['request', 'object', 'metadata', 'annotations'],
      ['request', 'object', 'metadata', 'labels'],
      ['request', 'object', 'spec', 'nodeSelector'],
    ]);
    const text = JSON.stringify(setAt(value, where, wide));
    return { spec: post(text), oversize: text.length > this.bodyLimit, heavy: count >= 10_000 };
  }

  private hugeString(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const { value } = this.base(rng, n);
    const size = rng.pick([256 * 1024 + 1, 1024 * 1024, 3 * 1024 * 1024, this.bodyLimit - 4_096, this.bodyLimit + 1]);
    const where = rng.pick<Path>([
      ['request', 'object', 'metadata', 'annotations', 'soak'],
      ['request', 'object', 'spec', 'containers', 0, 'args'],
      ['request', 'uid'],
      ['request', 'object', 'spec', 'soakUnknownField'],
    ]);
    const huge = 'x'.repeat(size);
    const text = JSON.stringify(setAt(value, where, where.includes('args') ? [huge] : huge));
    return { spec: post(text), oversize: Buffer.byteLength(text) > this.bodyLimit, heavy: true };
  }

  /** A valid review padded with trailing whitespace (still valid JSON) to exactly the limit, one under, one over. */
  private atLimit(rng: Rng, n: number): Omit<FuzzCase, 'n' | 'kind'> {
    const text = JSON.stringify(this.base(rng, n).value);
    const limit = rng.pick(['below', 'at', 'above', 'above'] as const);
    const size = this.bodyLimit + (limit === 'below' ? -1 : limit === 'at' ? 0 : 1);
    const body = Buffer.alloc(size, 0x20);
    body.write(text, 0, 'utf8');
    const chunks = limit === 'above' && rng.int(2) === 0 ? 16 : undefined;
    return {
      spec: { ...post(body), ...(chunks === undefined ? {} : { chunks }) },
      oversize: limit === 'above',
      heavy: true,
      limit,
    };
  }
}

function post(body: string | Buffer): RequestSpec {
  return { method: 'POST', path: '/mutate', headers: JSON_HEADERS, body };
}

function withUid(review: JsonObject, n: number): JsonObject {
  const value = structuredClone(review);
  const request = value.request;
  if (request !== null && typeof request === 'object' && !Array.isArray(request)) request.uid = `fuzz-${n}`;
  return value;
}
