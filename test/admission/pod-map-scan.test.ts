import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_ANNOTATIONS_BYTES, podOverLimits } from '../../src/admission/pod-limits.js';
import { scanPodMaps, type MapFacts, type PodMapScan } from '../../src/admission/pod-map-scan.js';
import { propertyRuns, propertyTimeout } from '../support/property-runs.js';

/** What the scan must find, read from the parsed review: the maps' members in insertion order. */
function expectedFacts(review: unknown): PodMapScan {
  const metadata = (review as { request?: { object?: { metadata?: Record<string, unknown> } } }).request?.object
    ?.metadata;
  const result: PodMapScan = {};
  for (const field of ['labels', 'annotations'] as const) {
    const map = metadata?.[field];
    if (map === null || typeof map !== 'object' || Array.isArray(map)) continue;
    const facts: MapFacts = { bytes: 0 };
    for (const [key, value] of Object.entries(map)) {
      if (typeof value !== 'string') {
        facts.nonString ??= { key, bytesBefore: facts.bytes };
        facts.bytes += Buffer.byteLength(key);
        continue;
      }
      facts.bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
    }
    result[field] = facts;
  }
  return result;
}

// Keys that are not integer-like, so that JavaScript's enumeration order is the text's order.
const mapKey = fc.string({ unit: 'binary', maxLength: 12 }).map((s) => `k${s}`);
const notString = fc.oneof(
  fc.integer(),
  fc.constant(null),
  fc.boolean(),
  fc.constant({ labels: { a: 1 } }),
  fc.constant(['x']),
);
const mapValue = fc.oneof(
  { weight: 9, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: notString },
);
const stringMap = fc.dictionary(mapKey, mapValue, { maxKeys: 12 });
const mapOrNot = fc.oneof(
  { weight: 4, arbitrary: stringMap },
  { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.constant(['a']), fc.constant('s')) },
);
// Objects with the same keys off the path: they must not count.
const decoy = fc.record({ metadata: fc.record({ labels: stringMap, annotations: stringMap }) });

const review = fc.record(
  {
    apiVersion: fc.constant('admission.k8s.io/v1'),
    labels: stringMap,
    request: fc.record(
      {
        uid: fc.string(),
        oldObject: decoy,
        object: fc.record(
          {
            spec: fc.record({ template: decoy, containers: fc.array(decoy, { maxLength: 2 }) }),
            metadata: fc.record(
              { name: fc.string(), labels: mapOrNot, annotations: mapOrNot },
              { requiredKeys: ['name'] },
            ),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: ['uid'] },
    ),
  },
  { requiredKeys: ['apiVersion'] },
);

describe('scanPodMaps', () => {
  const runs = propertyRuns(2000);

  it(
    'finds in the text what the parsed review holds: bytes, and the first value that is not a string',
    { timeout: propertyTimeout(runs) },
    () => {
      fc.assert(
        fc.property(review, fc.constantFrom(undefined, 0, 2, '\t'), (value, indent) => {
          const text = JSON.stringify(value, null, indent);
          expect(scanPodMaps(text)).toEqual(expectedFacts(JSON.parse(text)));
        }),
        { numRuns: runs },
      );
    },
  );

  it(
    'gives a large body the answer a walk of the parsed pod gives, around the annotations limit',
    { timeout: propertyTimeout(runs) },
    () => {
      const big = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }).map((s) => s.repeat(30_000));
      const entries = fc.array(
        fc.tuple(mapKey, fc.oneof({ weight: 8, arbitrary: big }, { weight: 1, arbitrary: notString })),
        {
          maxLength: 8,
        },
      );
      fc.assert(
        fc.property(entries, fc.dictionary(mapKey, mapValue, { maxKeys: 3 }), (members, labels) => {
          const annotations = Object.fromEntries(members);
          const text = JSON.stringify({ request: { object: { metadata: { labels, annotations } } } });
          const pod = (JSON.parse(text) as { request: { object: unknown } }).request.object;
          // Trailing blanks make the body large enough to be measured in its text, whatever the maps hold.
          const large = text + ' '.repeat(256 * 1024);
          expect(scanPodMaps(large, MAX_ANNOTATIONS_BYTES)).toBeDefined();
          expect(podOverLimits(pod, large)).toEqual(podOverLimits(pod));
        }),
        { numRuns: Math.ceil(runs / 10) },
      );
    },
  );

  it('stops reading once the annotations pass the limit', () => {
    const annotations: Record<string, string> = {};
    for (let i = 0; i < 1000; i++) annotations[`a${i}`] = 'v'.repeat(1000);
    const text = JSON.stringify({ request: { object: { metadata: { annotations, labels: { x: 1 } } } } });
    const scan = scanPodMaps(text, MAX_ANNOTATIONS_BYTES);
    expect(scan?.annotations?.bytes).toBeGreaterThan(MAX_ANNOTATIONS_BYTES);
    expect(scan?.annotations?.bytes).toBeLessThan(MAX_ANNOTATIONS_BYTES + 1100);
    // The labels after it were never reached; the too-large answer does not need them.
    expect(scan?.labels).toBeUndefined();
    const pod = (JSON.parse(text) as { request: { object: unknown } }).request.object;
    expect(podOverLimits(pod, text)).toMatchObject({ kind: 'too-large' });
  });

  it('reads the last occurrence of an object on the path, as JSON.parse does', () => {
    const twice = '{"request":{"object":{"metadata":{"annotations":{"a":"1"}},"metadata":{"labels":{"b":"2"}}}}}';
    expect(scanPodMaps(twice)).toEqual({ labels: { bytes: 2 } });
    const mapThenNull = '{"request":{"object":{"metadata":{"annotations":{"a":"1"},"annotations":null}}}}';
    expect(scanPodMaps(mapThenNull)).toEqual({});
    const metadataThenString = '{"request":{"object":{"metadata":{"labels":{"a":"1"}},"metadata":"x"}}}';
    expect(scanPodMaps(metadataThenString)).toEqual({});
  });

  it('decodes escapes and counts UTF-8 bytes: keys and values as JSON.parse gives them', () => {
    const text = '{"request":{"object":{"metadata":{"annotations":{"\\u00e9\\"q":"a\\\\b\\n","😀":"é"}}}}}';
    // é" q = 2 + 1 + 1, a\b<newline> = 4, 😀 = 4, é = 2
    expect(scanPodMaps(text)).toEqual({ annotations: { bytes: 4 + 4 + 4 + 2 } });
  });

  it('counts raw characters past ASCII as Buffer.byteLength does: pairs, lone surrogates, two and three bytes', () => {
    const values = ['é', '€', '😀', '\ud800', '\udc00x', 'a\ud800\ud800b', '\ud83d'];
    for (const value of values) {
      // Written into the text raw, not escaped as JSON.stringify writes lone surrogates.
      const text = `{"request":{"object":{"metadata":{"labels":{"k":"${value}"}}}}}`;
      expect(scanPodMaps(text)).toEqual({ labels: { bytes: 1 + Buffer.byteLength(value) } });
    }
  });

  it('survives nesting deeper than any call stack, a byte order mark, and text that is not JSON', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const text = `\ufeff{"deep":${deep},"request":{"object":{"metadata":{"labels":{"a":"b"}}}}}`;
    expect(scanPodMaps(text)).toEqual({ labels: { bytes: 2 } });
    expect(scanPodMaps('{"request":{"object":')).toBeUndefined();
    expect(scanPodMaps('{"a":"unterminated}')).toBeUndefined();
    expect(scanPodMaps('}')).toBeUndefined();
  });
});
