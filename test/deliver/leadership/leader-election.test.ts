/**
 * LeaderElection's timing, driven by a clock the test moves. The Lease store here is a few lines of memory
 * with resourceVersion conflicts, standing in for the API only so that time can be frozen and jumped; the
 * e2e suite runs the same class against a real kube-apiserver (test/e2e/deliver-env.e2e.test.ts).
 */
import type { V1Lease } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { leaseAction, observe } from '../../../src/deliver/leadership/lease.js';
import { LeaderElection, type LeaseApi, type LeaderTerm } from '../../../src/deliver/leadership/leader-election.js';
import { ManualClock } from '../../support/manual-clock.js';

class LeaseStore implements LeaseApi {
  lease: V1Lease | undefined;
  private version = 0;
  /** Calls that never answer while set: an API server that hangs. */
  hang = false;
  /** Calls that fail at once while set: an API server that answers 503. */
  refuse = false;
  read = (): Promise<V1Lease | undefined> =>
    this.answer(() => (this.lease === undefined ? undefined : structuredClone(this.lease)));
  create = (lease: V1Lease): Promise<V1Lease> =>
    this.answer(() => {
      if (this.lease !== undefined) throw Object.assign(new Error('exists'), { code: 409 });
      return this.store(lease);
    });
  replace = (lease: V1Lease): Promise<V1Lease> =>
    this.answer(() => {
      if (lease.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion)
        throw Object.assign(new Error('conflict'), { code: 409 });
      return this.store(lease);
    });
  private store(lease: V1Lease): V1Lease {
    this.version += 1;
    this.lease = { ...structuredClone(lease), metadata: { ...lease.metadata, resourceVersion: String(this.version) } };
    return structuredClone(this.lease);
  }
  private answer<T>(run: () => T): Promise<T> {
    if (this.hang) return new Promise(() => undefined);
    if (this.refuse) return Promise.reject(Object.assign(new Error('unavailable'), { code: 503 }));
    try {
      return Promise.resolve(run());
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await Promise.resolve();
}

/** A replica that has taken a fresh Lease: its store, its clock and its first term. */
async function leading() {
  const store = new LeaseStore();
  const clock = new ManualClock();
  const { e, terms } = election(store, clock);
  e.start();
  await settle();
  return { store, clock, e, terms, term: terms[0] };
}

function election(store: LeaseStore, clock: ManualClock, identity = 'me') {
  const terms: (LeaderTerm | undefined)[] = [];
  const errors: unknown[] = [];
  const e = new LeaderElection({
    api: store,
    name: 'l',
    namespace: 'ns',
    identity,
    durationSeconds: 15,
    retryMs: 2000,
    renewDeadlineMs: 10_000,
    clock,
    onTerm: (term) => terms.push(term),
    onError: (error) => errors.push(error),
  });
  return { e, terms, errors };
}

describe('LeaderElection', () => {
  it('creates the Lease and begins a fresh term; renewing keeps it fresh', async () => {
    const store = new LeaseStore();
    const clock = new ManualClock();
    const { e, terms } = election(store, clock);
    e.start();
    await settle();
    expect(store.lease?.spec?.holderIdentity).toBe('me');
    const term = terms[0];
    expect(term?.fresh()).toBe(true);
    for (let i = 0; i < 10; i += 1) {
      clock.advance(2000);
      await settle();
    }
    expect(term?.fresh()).toBe(true);
    expect(terms).toHaveLength(1);
    await e.release();
  });

  it('a replica frozen past the renew deadline is not fresh the moment it wakes, before any timer runs', async () => {
    const { clock, e, terms, term } = await leading();
    clock.jump(10_001);
    expect(term?.fresh()).toBe(false);
    clock.advance(0);
    await settle();
    expect(term?.signal.aborted).toBe(true);
    // The term ended before anything else ran; a renew after that, still unopposed, begins a new term.
    expect(terms[1]).toBeUndefined();
    expect(terms.length).toBeGreaterThanOrEqual(2);
    if (terms[2] !== undefined) expect(terms[2]).not.toBe(term);
    await e.stop();
  });

  it('bounds each Lease call by the renew deadline: a hung API ends the term', async () => {
    const store = new LeaseStore();
    const clock = new ManualClock();
    const { e, terms, errors } = election(store, clock);
    e.start();
    await settle();
    const term = terms[0];
    store.hang = true;
    clock.advance(2000);
    await settle();
    expect(term?.fresh()).toBe(true);
    clock.advance(10_000);
    await settle();
    expect(term?.signal.aborted).toBe(true);
    expect(errors.some((error) => error instanceof Error && /longer than 10000 ms/.test(error.message))).toBe(true);
    store.hang = false;
    await e.stop();
  });

  it('follows a live holder, and takes over once its record stayed unchanged for the lease duration', async () => {
    const store = new LeaseStore();
    const clock = new ManualClock();
    const first = election(store, clock, 'first');
    first.e.start();
    await settle();
    const second = election(store, clock, 'second');
    second.e.start();
    await settle();
    expect(second.terms).toEqual([]);
    expect(second.e.settled).toBe(true);
    // The first stops renewing without handing the Lease back (it was killed).
    await first.e.stop();
    for (let waited = 0; waited <= 16_000; waited += 2000) {
      clock.advance(2000);
      await settle();
    }
    expect(store.lease?.spec?.holderIdentity).toBe('second');
    expect(second.terms[0]?.fresh()).toBe(true);
    await second.e.stop();
  });

  it('stops acting once the renew deadline passes on the monotonic clock, though the wall clock stands still', async () => {
    const { store, clock, e, terms, term } = await leading();
    store.refuse = true;
    for (let waited = 0; waited < 8000; waited += 2000) {
      clock.advanceMonotonic(2000);
      await settle();
    }
    clock.advanceMonotonic(1999);
    expect(term?.fresh()).toBe(true);
    clock.advanceMonotonic(1);
    expect(term?.fresh()).toBe(false);
    await settle();
    expect(term?.signal.aborted).toBe(true);
    expect(terms.at(-1)).toBeUndefined();
    await e.stop();
  });

  it('keeps a fresh term through a wall clock stepped forward or back, and stamps renewals with the wall time', async () => {
    const { store, clock, e, terms, term } = await leading();
    clock.stepWall(3_600_000);
    expect(term?.fresh()).toBe(true);
    clock.advance(2000);
    await settle();
    expect(new Date(String(store.lease?.spec?.renewTime)).getTime()).toBe(clock.now());
    clock.stepWall(-7_200_000);
    clock.advance(2000);
    await settle();
    expect(new Date(String(store.lease?.spec?.renewTime)).getTime()).toBe(clock.now());
    expect(term?.fresh()).toBe(true);
    expect(terms).toEqual([term]);
    await e.release();
  });

  it('does not take a Lease whose renew time looks old until it saw it unchanged for the duration (clocks differ)', async () => {
    const store = new LeaseStore();
    const clock = new ManualClock();
    // Another replica holds it, with a renew time a day behind our wall clock.
    await store.create({
      metadata: { name: 'l', namespace: 'ns' },
      spec: { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: new Date(clock.now() - 86_400_000) },
    });
    const { e, terms } = election(store, clock);
    e.start();
    await settle();
    for (let waited = 2000; waited <= 14_000; waited += 2000) {
      clock.advance(2000);
      await settle();
    }
    expect(terms).toEqual([]);
    expect(store.lease?.spec?.holderIdentity).toBe('other');
    clock.advance(2000);
    await settle();
    expect(store.lease?.spec?.holderIdentity).toBe('me');
    expect(terms[0]?.fresh()).toBe(true);
    await e.release();
  });

  it('release ends the term and hands the Lease back', async () => {
    const store = new LeaseStore();
    const clock = new ManualClock();
    const { e, terms } = election(store, clock);
    e.start();
    await settle();
    await e.release();
    expect(terms[0]?.signal.aborted).toBe(true);
    expect(terms.at(-1)).toBeUndefined();
    expect(store.lease?.spec?.holderIdentity).toBe('');
  });
});

describe('leaseAction', () => {
  const record = (holder: string, renewTime = 't1') => ({ holder, renewTime, durationSeconds: 10 });
  it('creates a missing Lease, renews its own, takes an empty one, follows a live holder', () => {
    expect(leaseAction('me', undefined, 0)).toBe('create');
    expect(leaseAction('me', observe(undefined, record('me'), 0), 1)).toBe('renew');
    expect(leaseAction('me', observe(undefined, record(''), 0), 1)).toBe('take');
    expect(leaseAction('me', observe(undefined, record('other'), 0), 5000)).toBe('follow');
  });

  it("takes the Lease only when the holder's record stayed the same for the whole duration, by our clock", () => {
    const first = observe(undefined, record('other', 't1'), 0);
    expect(leaseAction('me', first, 10_001)).toBe('take');
    const renewed = observe(first, record('other', 't2'), 9000);
    expect(leaseAction('me', renewed, 10_001)).toBe('follow');
    expect(observe(renewed, record('other', 't2'), 12_000)).toBe(renewed);
  });
});
