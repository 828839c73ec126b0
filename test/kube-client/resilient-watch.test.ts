/**
 * ResilientWatch's own logic (first-list tracking, capped backoff, restart, stop) on a clock the test moves, with
 * client-node's real Watch aimed at a closed loopback port: every watch request fails the way a lost API server
 * makes it fail, and the list is the test's to succeed or fail. No API is faked; the e2e suite runs it against a
 * real kube-apiserver.
 */
import { KubeConfig, Watch, type KubernetesListObject, type V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RESTART_BACKOFF, ResilientWatch } from '../../src/kube-client/resilient-watch.js';
import { ManualClock } from '../support/manual-clock.js';

function unreachableWatch(): Watch {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'closed', server: 'http://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'nobody' }],
    contexts: [{ name: 'closed', cluster: 'closed', user: 'nobody' }],
    currentContext: 'closed',
  });
  return new Watch(config);
}

const list = (items: V1ConfigMap[]): KubernetesListObject<V1ConfigMap> => ({
  apiVersion: 'v1',
  kind: 'ConfigMapList',
  metadata: { resourceVersion: '7' },
  items,
});

/** Values as they are reported, and a way to wait for the n-th (from 0) to come. */
class Arrivals<T> {
  readonly items: T[] = [];
  private readonly waiters: { n: number; resolve: (item: T) => void }[] = [];
  push = (item: T): void => {
    this.items.push(item);
    for (const waiter of this.waiters.filter((w) => w.n < this.items.length)) waiter.resolve(item);
  };
  nth(n: number): Promise<T> {
    const item = this.items[n];
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => this.waiters.push({ n, resolve: () => resolve(this.items[n] as T) }));
  }
}

describe('ResilientWatch', () => {
  it('restarts after failed lists with capped exponential backoff, reset by a list that succeeds', async () => {
    const clock = new ManualClock();
    const retries = new Arrivals<number>();
    const lists = new Arrivals<V1ConfigMap[]>();
    let calls = 0;
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: unreachableWatch(),
      path: '/api/v1/namespaces/x/configmaps',
      list: () => {
        calls += 1;
        if (calls <= 4) return Promise.reject(new Error(`list ${calls} refused`));
        return Promise.resolve(list([{ metadata: { name: 'cm' } }]));
      },
      onList: lists.push,
      onError: (_error, retryInMs) => retries.push(retryInMs),
      clock,
      backoff: { minMs: 100, maxMs: 500 },
      random: () => 1,
    });
    watch.start();
    for (let i = 0; i < 4; i += 1) {
      const wait = await retries.nth(i);
      expect(watch.hasSynced).toBe(false);
      clock.advance(wait - 1);
      expect(calls).toBe(i + 1);
      clock.advance(1);
    }
    expect((await lists.nth(0)).map((c) => c.metadata?.name)).toEqual(['cm']);
    expect(retries.items).toEqual([100, 200, 400, 500]);
    expect(watch.hasSynced).toBe(true);
    // The watch that follows the list fails on the closed port: the backoff starts again from the minimum.
    expect(await retries.nth(4)).toBe(100);
    await watch.stop();
  });

  it('is not synced while no list has succeeded, and waits DEFAULT_RESTART_BACKOFF unless told', async () => {
    const clock = new ManualClock();
    const retries = new Arrivals<number>();
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: unreachableWatch(),
      path: '/api/v1/namespaces/x/configmaps',
      list: () => Promise.reject(new Error('forbidden')),
      onList: () => undefined,
      onError: (_error, retryInMs) => retries.push(retryInMs),
      clock,
      random: () => 1,
    });
    watch.start();
    expect(await retries.nth(0)).toBe(DEFAULT_RESTART_BACKOFF.minMs);
    expect(watch.hasSynced).toBe(false);
    await watch.stop();
  });

  it('stops restarting once stopped', async () => {
    const clock = new ManualClock();
    const retries = new Arrivals<number>();
    let calls = 0;
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: unreachableWatch(),
      path: '/api/v1/namespaces/x/configmaps',
      list: () => {
        calls += 1;
        return Promise.reject(new Error('refused'));
      },
      onList: () => undefined,
      onError: (_error, retryInMs) => retries.push(retryInMs),
      clock,
    });
    watch.start();
    await retries.nth(0);
    expect(clock.pending()).toHaveLength(1);
    await watch.stop();
    expect(clock.pending()).toEqual([]);
    clock.advance(DEFAULT_RESTART_BACKOFF.maxMs);
    expect(calls).toBe(1);
  });
});
