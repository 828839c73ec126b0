/** The controller's memory: each transition of a Sandbox's record, and the claims every replica keeps. */
import { describe, expect, it } from 'vitest';
import type { DeliverySandbox } from '../../../src/deliver/controller/claim.js';
import { SeenClaims, TermMemory } from '../../../src/deliver/controller/memory.js';

const KEY = 'ns/sbx';
const REQUEST = 'agents.kruise.io/init-runtime-request';

describe('TermMemory', () => {
  it('a delivery records what and where, ends a failure streak and a clearing, and says the pod before', () => {
    const memory = new TermMemory();
    expect(memory.failedOn(KEY, 'in-1')).toBe(true);
    expect(memory.failedOn(KEY, 'in-1')).toBe(false);
    memory.wants(KEY, 'want-1', 10);
    expect(memory.delivered(KEY, 'want-1', 'pod-a')).toBeUndefined();
    expect(memory.of(KEY)).toEqual({ delivered: 'want-1', lastPod: 'pod-a' });
    memory.cleared(KEY, 'pod-a url');
    expect(memory.of(KEY)).toEqual({ cleared: 'pod-a url', lastPod: 'pod-a' });
    expect(memory.delivered(KEY, 'want-2', 'pod-b')).toBe('pod-a');
    expect(memory.of(KEY)).toEqual({ delivered: 'want-2', lastPod: 'pod-b' });
  });

  it('times a want from when it was first seen, and anew once it changes or nothing is wanted', () => {
    const memory = new TermMemory();
    expect(memory.wants(KEY, 'a', 10)).toBe(10);
    expect(memory.wants(KEY, 'a', 20)).toBe(10);
    expect(memory.wants(KEY, 'b', 30)).toBe(30);
    memory.wantsNothing(KEY);
    expect(memory.wants(KEY, 'b', 40)).toBe(40);
  });

  it('a refusal holds for its inputs only; another decision ends it', () => {
    const memory = new TermMemory();
    memory.failedOn(KEY, 'in-1');
    memory.refusedOn(KEY, 'in-1');
    expect(memory.of(KEY)).toEqual({ blocked: 'in-1' });
    expect(memory.decided(KEY, 'in-1', false)).toBe(true);
    expect(memory.decided(KEY, 'in-2', false)).toBe(false);
    expect(memory.of(KEY)).toEqual({});
  });

  it('a hold lasts while the decisions are held, and says what a waiting key waits on', () => {
    const memory = new TermMemory();
    memory.holding(KEY, 'in-1', false);
    expect(memory.waitingOn(KEY)).toBe('in-1');
    expect(memory.decided(KEY, 'in-1', true)).toBe(false);
    expect(memory.of(KEY).held).toEqual({ inputs: 'in-1', reported: false });
    memory.decided(KEY, 'in-2', false);
    expect(memory.of(KEY).held).toBeUndefined();
    memory.failedOn(KEY, 'in-3');
    expect(memory.waitingOn(KEY)).toBe('in-3');
    memory.inputsChanged(KEY);
    expect(memory.waitingOn(KEY)).toBeUndefined();
  });

  it('forgets a Sandbox whole, and keeps no empty record', () => {
    const memory = new TermMemory();
    memory.delivered(KEY, 'w', 'p');
    memory.forget(KEY);
    expect(memory.of(KEY)).toEqual({});
    memory.wantsNothing('other');
    expect(memory.of('other')).toEqual({});
  });
});

describe('SeenClaims', () => {
  const claimed = (token: string): DeliverySandbox => ({
    metadata: { name: 'sbx', annotations: { [REQUEST]: JSON.stringify({ envVars: {}, accessToken: token }) } },
  });
  const unclaimed: DeliverySandbox = { metadata: { name: 'sbx', annotations: {} } };

  it("keeps the last claim's token through the claim's end, and forgets a deleted Sandbox", () => {
    const seen = new SeenClaims();
    expect(seen.lastClaim(KEY)).toBeUndefined();
    seen.saw(KEY, claimed('t1'));
    seen.saw(KEY, claimed('t2'));
    seen.saw(KEY, unclaimed);
    expect(seen.lastClaim(KEY)?.token).toBe('t2');
    seen.saw(KEY, undefined);
    expect(seen.lastClaim(KEY)).toBeUndefined();
  });

  it('keeps only the token and the pod of a claim once it ended, not the claimed object', () => {
    const seen = new SeenClaims();
    const version = { ...claimed('t1'), status: { podInfo: { podUID: 'pod-1' } } };
    seen.saw(KEY, version);
    seen.saw(KEY, unclaimed);
    // The claimed object is the cache's: once the claim ended, nothing of it is held (its request may be large).
    const annotations = version.metadata?.annotations;
    if (annotations !== undefined) annotations[REQUEST] = 'changed after';
    expect(seen.lastClaim(KEY)).toEqual({ token: 't1', podUid: 'pod-1' });
    seen.saw(KEY, claimed('t2'));
    expect(seen.lastClaim(KEY)?.token).toBe('t2');
  });

  it('keeps the pod a claim was seen in, for clearing to tell whether that pod served it', () => {
    const seen = new SeenClaims();
    seen.saw(KEY, { ...claimed('t1'), status: { podInfo: { podUID: 'pod-1' } } });
    seen.saw(KEY, unclaimed);
    expect(seen.lastClaim(KEY)).toEqual({ token: 't1', podUid: 'pod-1' });
  });
});
