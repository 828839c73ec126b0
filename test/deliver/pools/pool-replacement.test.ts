/**
 * The replacement's bounds (at most N in flight across the cluster and M per pool, each until the pool's next
 * pod is Ready or the timeout), its safety (the Sandbox read again right before the delete, the delete's
 * preconditions, the leader's term) and its stop on a loop. The world is in memory: Sandboxes and pods in a
 * cache the census reads, an API whose reads and deletes act on the same world, and a clock the test moves.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ConfigSnapshot } from '../../../src/config/injection-config.js';
import type { DeliveryPod } from '../../../src/deliver/controller/claim.js';
import type { SandboxCache } from '../../../src/deliver/controller/controller.js';
import { PoolPodCensus } from '../../../src/deliver/pools/pool-pod-census.js';
import type { PoolSandbox } from '../../../src/deliver/pools/pool-pods.js';
import {
  PoolReplacement,
  type ReplacementReport,
  type ReplacementSettings,
} from '../../../src/deliver/pools/pool-replacement.js';
import { STATUS_ANNOTATION } from '../../../src/injection/index.js';
import { InjectionConfigStore } from '../../../src/config/injection-config.js';
import { AGENT_CONFIG } from '../../support/builders.js';
import { ManualClock } from '../../support/manual-clock.js';
import { waitUntil } from '../../support/wait-until.js';

const TIMEOUT_MS = 60_000;
type State = 'fine' | 'missing' | 'stale';

class World {
  readonly sandboxes = new Map<string, PoolSandbox>();
  readonly pods = new Map<string, DeliveryPod>();
  readonly config: ConfigSnapshot;
  readonly census: PoolPodCensus;
  private nextUid = 0;
  private version = 0;

  constructor() {
    const store = new InjectionConfigStore();
    store.update({ 'agent-runtime': JSON.stringify(AGENT_CONFIG) });
    this.config = store.snapshot();
    const cache: SandboxCache = {
      get: (key) => this.sandboxes.get(key),
      keys: () => this.sandboxes.keys(),
      podsOf: (sandbox) => {
        const pod = this.pods.get(`${sandbox.metadata?.namespace ?? ''}/${sandbox.metadata?.name ?? ''}`);
        return pod === undefined ? [] : [pod];
      },
    };
    this.census = new PoolPodCensus({ cache, config: () => this.config, settings: { allowHostNetwork: false } });
  }

  /** A pool Sandbox with a pod in `state`; not Ready unless said. */
  add(pool: string, name: string, state: State, ready = true): string {
    const key = `team/${name}`;
    this.sandboxes.set(key, {
      metadata: {
        name,
        namespace: 'team',
        uid: `${name}-uid`,
        ownerReferences: [
          {
            apiVersion: 'agents.kruise.io/v1alpha1',
            kind: 'SandboxSet',
            name: pool,
            uid: `${pool}-uid`,
            controller: true,
          },
        ],
      },
      spec: { runtimes: [{ name: 'agent-runtime' }] },
    });
    this.newPod(key, state, ready);
    return key;
  }

  /** The pool's controller makes a new pod for the Sandbox (as a stand-in does: same Sandbox, new pod). */
  newPod(key: string, state: State, ready = false): string {
    const [namespace = '', name = ''] = key.split('/');
    const uid = `pod-${++this.nextUid}`;
    const revision =
      state === 'stale'
        ? 'sha256:0000000000000000'
        : this.config.present
          ? this.config.revision(['agent-runtime'])
          : '';
    const status = { injected: ['agent-runtime'], present: [], skipped: [], wrapped: [], revision };
    this.pods.set(key, {
      metadata: {
        name,
        namespace,
        uid,
        resourceVersion: String(++this.version),
        ...(state === 'missing' ? {} : { annotations: { [STATUS_ANNOTATION]: JSON.stringify(status) } }),
        ownerReferences: [
          { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name, uid: `${name}-uid`, controller: true },
        ],
      },
      spec: { containers: [{ name: 'main' }] },
      status: {
        phase: 'Running',
        podIP: '10.0.0.1',
        conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      },
    });
    const sandbox = this.sandboxes.get(key);
    if (sandbox !== undefined) this.sandboxes.set(key, { ...sandbox, status: { podInfo: { podUID: uid } } });
    this.census.changed(key);
    return uid;
  }

  ready(key: string): void {
    const pod = this.pods.get(key);
    if (pod === undefined) throw new Error(`no pod for ${key}`);
    this.pods.set(key, {
      ...pod,
      metadata: { ...pod.metadata, resourceVersion: String(++this.version) },
      status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    this.census.changed(key);
  }

  claim(key: string): void {
    const sandbox = this.sandboxes.get(key);
    if (sandbox === undefined) throw new Error(`no Sandbox ${key}`);
    this.sandboxes.set(key, {
      ...sandbox,
      metadata: { ...sandbox.metadata, labels: { 'agents.kruise.io/sandbox-claimed': 'true' }, ownerReferences: [] },
    });
  }

  podUid(key: string): string | undefined {
    const uid: unknown = this.pods.get(key)?.metadata.uid;
    return typeof uid === 'string' ? uid : undefined;
  }
}

/** `whileDeleting`: what happens on the API server as a delete is taken (a claim landing then). */
function harness(settings: Partial<ReplacementSettings> = {}, whileDeleting?: (key: string) => void) {
  const world = new World();
  const clock = new ManualClock();
  const deleted: string[] = [];
  const reports: ReplacementReport[] = [];
  const calls: string[] = [];
  const replacement = new PoolReplacement({
    settings: {
      states: new Set(['missing', 'stale']),
      maxAtOnce: 5,
      maxPerPool: { kind: 'count', count: 1 },
      readyTimeoutMs: TIMEOUT_MS,
      ...settings,
    },
    census: world.census,
    api: {
      readSandbox: (namespace, name) => {
        calls.push(`read ${namespace}/${name}`);
        const stored = world.sandboxes.get(`${namespace}/${name}`);
        return Promise.resolve(stored === undefined ? undefined : structuredClone(stored));
      },
      deletePod: (namespace, name, uid, resourceVersion) => {
        calls.push(`delete ${namespace}/${name} ${uid}@${resourceVersion}`);
        const key = `${namespace}/${name}`;
        const pod = world.pods.get(key);
        if (pod === undefined) return Promise.resolve('gone' as const);
        if (pod.metadata.uid !== uid || pod.metadata.resourceVersion !== resourceVersion)
          return Promise.resolve('changed' as const);
        world.pods.delete(key);
        deleted.push(uid);
        whileDeleting?.(key);
        world.census.changed(key);
        return Promise.resolve('deleted' as const);
      },
    },
    clock,
    report: (report) => reports.push(report),
  });
  world.census.listen((key, before, after) => replacement.observe(key, before, after));
  const freshness = { value: true };
  const abort = new AbortController();
  const term = { signal: abort.signal, fresh: () => freshness.value };
  return { world, clock, deleted, reports, calls, replacement, term, freshness };
}

afterEach(() => {
  vi.useRealTimers();
});

/** Waits until `list` (the deletions, the reports) holds `length` entries: the replacement goes on in promises. */
function untilLength(list: readonly unknown[], length: number, what: string): Promise<number> {
  return waitUntil(() => list.length, {
    what: `the ${what} to number ${length}`,
    timeoutMs: 5000,
    intervalMs: 5,
    until: (n) => n === length,
  });
}

describe('pool pod replacement', () => {
  it('deletes nothing while it does not hold the Lease, nor when its term is not provably fresh', async () => {
    const { world, replacement, calls, term, freshness } = harness();
    world.add('pool-a', 'a1', 'missing');
    await Promise.resolve();
    expect(calls).toEqual([]);
    freshness.value = false;
    replacement.setTerm(term);
    await Promise.resolve();
    expect(calls).toEqual([]);
  });

  it('replaces one pod of a pool at a time: the next once the pod after it in the pool is Ready', async () => {
    const { world, replacement, deleted, term, reports } = harness();
    const keys = ['a1', 'a2', 'a3'].map((name) => world.add('pool-a', name, 'stale'));
    replacement.setTerm(term);
    await untilLength(deleted, 1, 'deletions');
    expect(replacement.figures()).toEqual({ inFlight: 1, stoppedPools: 0 });
    const first = keys.find((key) => world.podUid(key) === undefined) ?? '';
    world.newPod(first, 'fine');
    await Promise.resolve();
    expect(deleted).toHaveLength(1);
    world.ready(first);
    await untilLength(deleted, 2, 'deletions');
    expect(reports.filter((r) => r.kind === 'replaced').map((r) => r.kind === 'replaced' && r.entry.state)).toEqual([
      'stale',
      'stale',
    ]);
  });

  it('keeps at most M per pool and N across the cluster', async () => {
    const { world, replacement, deleted, term } = harness({ maxAtOnce: 5, maxPerPool: { kind: 'count', count: 2 } });
    for (const pool of ['p', 'q', 'r']) for (let i = 0; i < 4; i++) world.add(pool, `${pool}${i}`, 'missing');
    replacement.setTerm(term);
    await untilLength(deleted, 5, 'deletions');
    const perPool = ['p', 'q', 'r'].map(
      (pool) => [0, 1, 2, 3].filter((i) => world.podUid(`team/${pool}${i}`) === undefined).length,
    );
    expect(perPool.every((n) => n <= 2)).toBe(true);
    expect(replacement.figures().inFlight).toBe(5);
  });

  it('takes a share of the pool, rounded down and at least one', async () => {
    const { world, replacement, deleted, term } = harness({ maxPerPool: { kind: 'percent', percent: 25 } });
    for (let i = 0; i < 8; i++) world.add('big', `b${i}`, 'stale');
    for (let i = 0; i < 2; i++) world.add('small', `s${i}`, 'stale');
    replacement.setTerm(term);
    // 25% of 8 is 2; of 2 it rounds down to 0, so 1. The pool shrinks by one as each deleted pod goes.
    await untilLength(deleted, 3, 'deletions');
    await Promise.resolve();
    expect(deleted).toHaveLength(3);
  });

  it('frees the slot at the timeout when no Ready pod follows, and the next pod is replaced', async () => {
    const { world, replacement, deleted, term, clock, reports } = harness();
    world.add('pool-a', 'a1', 'stale');
    world.add('pool-a', 'a2', 'stale');
    replacement.setTerm(term);
    await untilLength(deleted, 1, 'deletions');
    const first = ['team/a1', 'team/a2'].find((key) => world.podUid(key) === undefined) ?? '';
    world.newPod(first, 'fine');
    clock.advance(TIMEOUT_MS - 1);
    await Promise.resolve();
    expect(deleted).toHaveLength(1);
    clock.advance(1);
    await untilLength(deleted, 2, 'deletions');
    expect(reports).toContainEqual({
      kind: 'timed-out',
      pool: 'team/pool-a',
      podUid: expect.any(String) as unknown,
      cameBack: true,
    });
  });

  it('stops a pool whose pods come back in the state they were replaced for, twice in a row, and says so', async () => {
    const { world, replacement, deleted, term, reports } = harness();
    const keys = ['a1', 'a2', 'a3', 'a4'].map((name) => world.add('pool-a', name, 'stale'));
    replacement.setTerm(term);
    for (const round of [1, 2]) {
      await untilLength(deleted, round, 'deletions');
      const gone = keys.find((key) => world.podUid(key) === undefined) ?? '';
      world.newPod(gone, 'stale', true);
    }
    await Promise.resolve();
    expect(deleted).toHaveLength(2);
    expect(replacement.figures()).toEqual({ inFlight: 0, stoppedPools: 1 });
    const stopped = reports.find((r) => r.kind === 'stopped');
    expect(stopped).toMatchObject({ kind: 'stopped', pool: 'team/pool-a', state: 'stale' });
    expect(stopped?.kind === 'stopped' && stopped.why).toMatch(/^pod pod-\d+ came back stale: it records/);
    // A change of the injection config may be the fix: the pool is tried again.
    replacement.configChanged();
    await untilLength(deleted, 3, 'deletions');
    expect(reports).toContainEqual({ kind: 'resumed', pool: 'team/pool-a' });
  });

  it('counts a pod that comes back fine as the end of a streak', async () => {
    const { world, replacement, deleted, term } = harness();
    const keys = ['a1', 'a2', 'a3', 'a4'].map((name) => world.add('pool-a', name, 'missing'));
    replacement.setTerm(term);
    for (const [round, back] of [
      [1, 'missing'],
      [2, 'fine'],
      [3, 'missing'],
    ] as const) {
      await untilLength(deleted, round, 'deletions');
      const gone = keys.find((key) => world.podUid(key) === undefined) ?? '';
      world.newPod(gone, back, true);
    }
    await untilLength(deleted, 4, 'deletions');
    expect(replacement.figures().stoppedPools).toBe(0);
  });

  it('never deletes the pod of a Sandbox claimed since it was judged: the Sandbox is read again first', async () => {
    const { world, replacement, calls, term, reports } = harness();
    const key = world.add('pool-a', 'a1', 'stale');
    world.claim(key);
    replacement.setTerm(term);
    await untilLength(reports, 1, 'reports');
    expect(calls).toEqual(['read team/a1']);
    expect(reports[0]).toMatchObject({ kind: 'skipped', why: 'the Sandbox is claimed' });
    expect(world.podUid(key)).toBeDefined();
  });

  it('says so when a claim landed in the moment between the re-read and the delete', async () => {
    const { world, replacement, calls, term, reports } = harness({}, (key) => world.claim(key));
    world.add('pool-a', 'a1', 'stale');
    replacement.setTerm(term);
    await waitUntil(() => reports.map((r) => r.kind).join(', '), {
      what: 'a replacement and a claim meanwhile',
      timeoutMs: 5000,
      intervalMs: 5,
      until: (kinds) => kinds === 'replaced, claimed-meanwhile',
    });
    expect(calls).toEqual(['read team/a1', 'delete team/a1 pod-1@1', 'read team/a1']);
  });

  it('conditions the delete on the pod as judged: a pod changed since is not deleted', async () => {
    const { world, replacement, calls, term, reports } = harness();
    const key = world.add('pool-a', 'a1', 'stale');
    const pod = world.pods.get(key);
    replacement.setTerm(term);
    // The pod changes on the API server between the judgement and the delete, before the cache hears of it.
    if (pod !== undefined) world.pods.set(key, { ...pod, metadata: { ...pod.metadata, resourceVersion: '999' } });
    await untilLength(reports, 1, 'reports');
    expect(calls[1]).toMatch(/^delete team\/a1 pod-1@1$/);
    expect(reports[0]).toMatchObject({ kind: 'skipped', why: expect.stringContaining('precondition') as unknown });
    expect(world.podUid(key)).toBe('pod-1');
  });

  it('replaces only the states asked for, and only pods of a pool', async () => {
    const { world, replacement, deleted, term } = harness({ states: new Set(['missing']) });
    world.add('pool-a', 'stale1', 'stale');
    const alone = world.add('pool-a', 'alone', 'missing');
    const sandbox = world.sandboxes.get(alone);
    if (sandbox !== undefined)
      world.sandboxes.set(alone, { ...sandbox, metadata: { ...sandbox.metadata, ownerReferences: [] } });
    world.census.changed(alone);
    replacement.setTerm(term);
    await Promise.resolve();
    await Promise.resolve();
    expect(deleted).toEqual([]);
    world.add('pool-a', 'missing1', 'missing');
    await untilLength(deleted, 1, 'deletions');
  });

  it('forgets what was in flight when the term ends, and sends nothing more in it', async () => {
    const { world, replacement, deleted, term, calls } = harness();
    world.add('pool-a', 'a1', 'stale');
    world.add('pool-a', 'a2', 'stale');
    replacement.setTerm(term);
    await untilLength(deleted, 1, 'deletions');
    replacement.setTerm(undefined);
    expect(replacement.figures()).toEqual({ inFlight: 0, stoppedPools: 0 });
    const sent = calls.length;
    world.add('pool-a', 'a3', 'stale');
    await Promise.resolve();
    expect(calls).toHaveLength(sent);
  });
});
