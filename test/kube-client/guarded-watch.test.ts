/**
 * The transform and the silence deadline, on a scripted inner Watch (the test hands each request its events)
 * and a clock the test moves. With ResilientWatch on top, the real client-node ListWatch takes the silence as
 * the 410 it is dressed as, and lists again. test/e2e/paged-watch.e2e.test.ts freezes a real watch instead.
 */
import type { KubernetesListObject, V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { GuardedWatch, WatchSilentError } from '../../src/kube-client/guarded-watch.js';
import { ResilientWatch } from '../../src/kube-client/resilient-watch.js';
import { ManualClock } from '../support/manual-clock.js';
import { ScriptedWatch } from '../support/scripted-watch.js';

const cm = (name: string, version: string): V1ConfigMap => ({
  metadata: { name, namespace: 'ns', resourceVersion: version, managedFields: [{ manager: 'kubectl' }] },
  data: { big: 'x'.repeat(1000) },
});
const strip = (object: V1ConfigMap): V1ConfigMap => ({
  metadata: {
    name: object.metadata?.name,
    namespace: object.metadata?.namespace,
    resourceVersion: object.metadata?.resourceVersion,
  },
});

function guarded(silenceMs = 1000) {
  const inner = new ScriptedWatch();
  const clock = new ManualClock();
  const silences: WatchSilentError[] = [];
  const watch = new GuardedWatch<V1ConfigMap>(inner, {
    transform: strip,
    silenceMs,
    clock,
    onSilence: (e) => silences.push(e),
  });
  return { inner, clock, silences, watch };
}

async function tick(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
}

describe('GuardedWatch', () => {
  it('asks for bookmarks and transforms the objects of ADDED, MODIFIED and DELETED only', async () => {
    const { inner, watch } = guarded();
    const seen: [string, unknown][] = [];
    await watch.watch(
      '/api/v1/configmaps',
      { resourceVersion: '5' },
      (phase, object) => seen.push([phase, object]),
      () => undefined,
    );
    await tick();
    const request = inner.requests[0];
    expect(request?.params).toEqual({ resourceVersion: '5', allowWatchBookmarks: true });
    const bookmark = { kind: 'ConfigMap', metadata: { resourceVersion: '9' } };
    const status = { kind: 'Status', code: 410 };
    request?.event('ADDED', cm('a', '6'));
    request?.event('MODIFIED', cm('a', '7'));
    request?.event('DELETED', cm('a', '8'));
    request?.event('BOOKMARK', bookmark);
    request?.event('ERROR', status);
    expect(seen).toEqual([
      ['ADDED', strip(cm('a', '6'))],
      ['MODIFIED', strip(cm('a', '7'))],
      ['DELETED', strip(cm('a', '8'))],
      ['BOOKMARK', bookmark],
      ['ERROR', status],
    ]);
  });

  it('keeps a watch whose events, bookmarks included, come within the deadline', async () => {
    const { inner, clock, silences, watch } = guarded(1000);
    const ends: unknown[] = [];
    await watch.watch(
      '/p',
      {},
      () => undefined,
      (error) => ends.push(error),
    );
    await tick();
    for (let i = 0; i < 5; i += 1) {
      clock.jump(900);
      inner.requests[0]?.event('BOOKMARK', { metadata: { resourceVersion: String(i) } });
      clock.fire();
    }
    expect(silences).toEqual([]);
    expect(ends).toEqual([]);
    const [next, ...more] = clock.pending();
    expect(more).toEqual([]);
    expect(next).toBeGreaterThan(0);
    expect(next).toBeLessThanOrEqual(1000);
  });

  it('abandons a watch silent for the deadline: aborts it, ends it as a 410, and ignores what it sends after', async () => {
    const { inner, clock, silences, watch } = guarded(1000);
    const ends: unknown[] = [];
    const seen: string[] = [];
    await watch.watch(
      '/p',
      {},
      (phase) => seen.push(phase),
      (error) => ends.push(error),
    );
    await tick();
    clock.jump(400);
    inner.requests[0]?.event('ADDED', cm('a', '1'));
    clock.fire(); // at 1000: 600 ms since the event, re-armed for the 400 left
    expect(silences).toEqual([]);
    expect(clock.pending()).toEqual([400]);
    clock.fire();
    expect(silences.map((s) => s.silentMs)).toEqual([1000]);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toBeInstanceOf(WatchSilentError);
    expect(ends[0]).toMatchObject({ statusCode: 410 });
    expect(inner.requests[0]?.controller.signal.aborted).toBe(true);
    inner.requests[0]?.event('MODIFIED', cm('a', '2'));
    inner.requests[0]?.end(new Error('aborted'));
    expect(seen).toEqual(['ADDED']);
    expect(ends).toHaveLength(1);
  });

  it('passes on the end of a watch once, and stops its deadline', async () => {
    const { inner, clock, watch } = guarded(1000);
    const ends: unknown[] = [];
    await watch.watch(
      '/p',
      {},
      () => undefined,
      (error) => ends.push(error),
    );
    await tick();
    inner.requests[0]?.end(null);
    inner.requests[0]?.end(new Error('again'));
    expect(ends).toEqual([null]);
    expect(clock.pending()).toEqual([]);
  });

  it('aborting its controller aborts the inner request, stops the deadline, and ends nothing', async () => {
    const { inner, clock, watch } = guarded(1000);
    const ends: unknown[] = [];
    const controller = await watch.watch(
      '/p',
      {},
      () => undefined,
      (error) => ends.push(error),
    );
    await tick();
    controller.abort();
    expect(inner.requests[0]?.controller.signal.aborted).toBe(true);
    inner.requests[0]?.end(new Error('The operation was aborted'));
    expect(ends).toEqual([]);
    expect(clock.pending()).toEqual([]);
  });
});

describe('ResilientWatch on a silent watch', () => {
  it('lists again after the silence, says so, and keeps the cache with the transformed objects', async () => {
    const inner = new ScriptedWatch();
    const clock = new ManualClock();
    let lists = 0;
    const errors: [unknown, number][] = [];
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: inner,
      path: '/api/v1/namespaces/ns/configmaps',
      list: (): Promise<KubernetesListObject<V1ConfigMap>> => {
        lists += 1;
        return Promise.resolve({
          metadata: { resourceVersion: String(lists * 10) },
          items: [cm(`listed-${lists}`, String(lists * 10))],
        });
      },
      transform: strip,
      silenceMs: 5000,
      clock,
      onList: () => undefined,
      onError: (error, retryInMs) => errors.push([error, retryInMs]),
    });
    const first = inner.nextRequest();
    watch.start();
    await first;
    expect(inner.requests[0]?.params).toMatchObject({ resourceVersion: '10', allowWatchBookmarks: true });
    inner.requests[0]?.event('ADDED', cm('watched', '11'));
    expect(watch.get('watched', 'ns')).toEqual(strip(cm('watched', '11')));
    expect(watch.get('listed-1', 'ns')).toEqual(strip(cm('listed-1', '10')));

    const second = inner.nextRequest();
    clock.jump(5000);
    clock.fire();
    await second;
    expect(lists).toBe(2);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.[0]).toBeInstanceOf(WatchSilentError);
    expect(errors[0]?.[1]).toBe(0);
    expect(inner.requests[1]?.params).toMatchObject({ resourceVersion: '20' });
    // The second list is the whole truth: what it lacks is gone from the cache.
    expect(watch.list().map((c) => c.metadata?.name)).toEqual(['listed-2']);
    expect(watch.get('listed-2', 'ns')).toEqual(strip(cm('listed-2', '20')));
    await watch.stop();
    expect(inner.requests[1]?.controller.signal.aborted).toBe(true);
    expect(clock.pending()).toEqual([]);
  });
});
