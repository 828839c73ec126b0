/**
 * The revision of the injection config a pod was made from: a digest of the ConfigMap keys its admission used,
 * recorded in the pod's status annotation, and compared by deliver-env with what the config in force gives.
 *
 * It must be the same on every replica and across restarts, and the same for the same content, so it is taken
 * from the keys' parsed values (as the Sandbox controller's Go code reads them: nulls dropped, field names
 * folded), written as canonical JSON (object keys sorted, no spaces), never from the ConfigMap's text or its
 * resourceVersion: an edit that only re-indents a key changes neither the injection nor the revision.
 *
 * Each key's digest is made once per config version (`keyDigest`, kept per parsed value), and the revision of a
 * set of keys once per set and version (`RevisionMemo`): admissions only look it up.
 *
 *   keyDigest(config) = hex sha256 of canonicalJson(config)
 *   revision(keys)    = "sha256:" + the first 16 hex digits of sha256 of canonicalJson({key: keyDigest, ...})
 *
 * Sixty-four bits tell versions of one ConfigMap apart with room to spare; the value stays short enough to read
 * in `explain` and in the annotation.
 */
import { createHash } from 'node:crypto';
import type { RuntimeConfig } from '../kube-shapes/kubernetes.js';

/** JSON with every object's keys in code-point order and no whitespace: one text for one value. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Parsed configs are frozen and shared across versions while a key is unchanged: each is hashed once. */
const digests = new WeakMap<RuntimeConfig, string>();

export function keyDigest(config: RuntimeConfig): string {
  let digest = digests.get(config);
  if (digest === undefined) {
    digest = sha256(canonicalJson(config));
    digests.set(config, digest);
  }
  return digest;
}

/** The revision of keys whose digests are given: the key names and their digests, in no particular order. */
export function revisionOf(keyDigests: ReadonlyMap<string, string>): string {
  const object = Object.fromEntries(keyDigests);
  return `sha256:${sha256(canonicalJson(object)).slice(0, 16)}`;
}

/**
 * The revisions of one config version, by set of keys. The sets in use are few (one per kind of pool), so each
 * is computed once; past MAX_SETS (a hostile or careless stream of Sandboxes naming ever new runtimes) the memo
 * starts again rather than grow.
 */
export class RevisionMemo {
  private static readonly MAX_SETS = 256;
  private readonly known = new Map<string, string | undefined>();

  /** `digestOf(key)`: the digest of the config in force for that key, undefined when it has none. */
  constructor(private readonly digestOf: (key: string) => string | undefined) {}

  /** The revision of `keys` (order and repeats do not matter); undefined when one has no config in force. */
  revision(keys: readonly string[]): string | undefined {
    // ConfigMap keys are [-._a-zA-Z0-9]+: a newline never occurs in one. The keys as given are looked up first:
    // a pool's admissions give them in the same order every time, so an admission neither sorts nor copies.
    const asGiven = keys.join('\n');
    if (this.known.has(asGiven)) return this.known.get(asGiven);
    const sorted = [...new Set(keys)].sort();
    const id = sorted.join('\n');
    const revision = this.known.has(id) ? this.known.get(id) : this.compute(sorted);
    if (this.known.size >= RevisionMemo.MAX_SETS) this.known.clear();
    this.known.set(id, revision);
    this.known.set(asGiven, revision);
    return revision;
  }

  private compute(sorted: readonly string[]): string | undefined {
    const found = new Map<string, string>();
    for (const key of sorted) {
      const digest = this.digestOf(key);
      if (digest === undefined) return undefined;
      found.set(key, digest);
    }
    return revisionOf(found);
  }
}
