import { describe, expect, it } from 'vitest';
import { canonicalJson, keyDigest, RevisionMemo, revisionOf } from '../../src/config/config-revision.js';
import { InjectionConfigStore, parseRuntimeConfig } from '../../src/config/injection-config.js';

const AGENT = JSON.stringify({
  csiSidecar: [{ name: 'agent-runtime', image: 'runtime:1', env: [{ name: 'A', value: '1' }] }],
  mainContainer: { env: [{ name: 'E', value: 'x' }] },
});
const CSI = JSON.stringify({ csiSidecar: [{ name: 'csi-sidecar', image: 'csi:1' }] });

function snapshotOf(data: Record<string, string>) {
  const store = new InjectionConfigStore();
  store.update(data);
  const snapshot = store.snapshot();
  if (!snapshot.present) throw new Error('no snapshot');
  return snapshot;
}

describe('canonicalJson', () => {
  it('sorts object keys at every depth, keeps array order, and writes no spaces', () => {
    expect(canonicalJson({ b: [3, { d: 1, c: 2 }], a: 'x' })).toBe('{"a":"x","b":[3,{"c":2,"d":1}]}');
  });

  it('gives one text for objects that differ only in key order', () => {
    expect(canonicalJson({ x: 1, y: { p: true, q: null } })).toBe(canonicalJson({ y: { q: null, p: true }, x: 1 }));
  });
});

describe('the revision of the keys a pod used', () => {
  it('is the same for the same content, however the ConfigMap text is laid out or its fields spelt', () => {
    const spaced = JSON.stringify(JSON.parse(AGENT), null, 4);
    // Go reads field names case-insensitively and null as absent: so does the parser, and so the revision.
    const respelt = AGENT.replace('"csiSidecar"', '"CsiSidecar"').replace('}}', '},"volume":null}');
    const revisions = [AGENT, spaced, respelt].map((text) =>
      snapshotOf({ 'agent-runtime': text }).revision(['agent-runtime']),
    );
    expect(revisions[0]).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(new Set(revisions).size).toBe(1);
  });

  it('is the same in another store (another replica, a restart) and for the keys in any order', () => {
    const one = snapshotOf({ 'agent-runtime': AGENT, csi: CSI });
    const other = snapshotOf({ csi: CSI, 'agent-runtime': AGENT });
    expect(one.revision(['agent-runtime', 'csi'])).toBe(other.revision(['csi', 'agent-runtime', 'csi']));
  });

  it('changes with a used key, and not with a key the pod did not use', () => {
    const before = snapshotOf({ 'agent-runtime': AGENT, csi: CSI });
    const newImage = snapshotOf({ 'agent-runtime': AGENT.replace('runtime:1', 'runtime:2'), csi: CSI });
    const newCsi = snapshotOf({ 'agent-runtime': AGENT, csi: CSI.replace('csi:1', 'csi:2') });
    expect(newImage.revision(['agent-runtime'])).not.toBe(before.revision(['agent-runtime']));
    expect(newCsi.revision(['agent-runtime'])).toBe(before.revision(['agent-runtime']));
    expect(newCsi.revision(['agent-runtime', 'csi'])).not.toBe(before.revision(['agent-runtime', 'csi']));
  });

  it('names the keys too: two keys with the same content are two revisions', () => {
    const snapshot = snapshotOf({ a: CSI, b: CSI });
    expect(snapshot.revision(['a'])).not.toBe(snapshot.revision(['b']));
  });

  it('is undefined when a key has no config in force, and follows a bad edit to the last valid version', () => {
    const store = new InjectionConfigStore();
    store.update({ 'agent-runtime': AGENT });
    const good = store.snapshot();
    store.update({ 'agent-runtime': '{not json' });
    const fallback = store.snapshot();
    if (!good.present || !fallback.present) throw new Error('no snapshot');
    expect(fallback.revision(['agent-runtime'])).toBe(good.revision(['agent-runtime']));
    expect(fallback.revision(['agent-runtime', 'missing'])).toBeUndefined();
    expect(snapshotOf({ 'agent-runtime': '{not json' }).revision(['agent-runtime'])).toBeUndefined();
  });

  it('is the digest its definition gives, so any tool can recompute it', () => {
    const parsed = parseRuntimeConfig(CSI);
    if (!parsed.ok) throw new Error(parsed.message);
    const expected = revisionOf(new Map([['csi', keyDigest(parsed.config)]]));
    expect(snapshotOf({ csi: CSI }).revision(['csi'])).toBe(expected);
  });
});

describe('RevisionMemo', () => {
  it('asks for each key digest once per set of keys', () => {
    const asked: string[] = [];
    const memo = new RevisionMemo((key) => {
      asked.push(key);
      return `digest-${key}`;
    });
    const first = memo.revision(['b', 'a']);
    expect(memo.revision(['a', 'b', 'a'])).toBe(first);
    expect(asked).toEqual(['a', 'b']);
  });
});
