/**
 * ResilientWatch's own logic (first-list tracking, capped backoff, restart, stop) with client-node's real Watch
 * aimed at a closed loopback port: every watch request fails the way a lost API server makes it fail, and the
 * list is the test's to succeed or fail. No API is faked; the e2e suite runs it against a real kube-apiserver.
 */
import { KubeConfig, Watch, type KubernetesListObject, type V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ResilientWatch } from '../../../src/sources/kube/resilient-watch.js';

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

/** A delay the test releases, recording how long each wait would have been. */
function recordedDelay() {
  const waits: number[] = [];
  const pending: (() => void)[] = [];
  const delay = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      waits.push(ms);
      pending.push(resolve);
    });
  const next = async (): Promise<void> => {
    while (pending.length === 0) await new Promise((r) => setImmediate(r));
    pending.shift()?.();
  };
  return { delay, waits, next };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}

describe('ResilientWatch', () => {
  it('restarts after failed lists with capped exponential backoff, and reports synced after the first list', async () => {
    const { delay, waits, next } = recordedDelay();
    let calls = 0;
    const lists: V1ConfigMap[][] = [];
    const errors: number[] = [];
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: unreachableWatch(),
      path: '/api/v1/namespaces/x/configmaps',
      list: () => {
        calls += 1;
        if (calls <= 4) return Promise.reject(new Error(`list ${calls} refused`));
        return Promise.resolve(list([{ metadata: { name: 'cm' } }]));
      },
      onList: (items) => lists.push(items),
      onError: (_error, retryInMs) => errors.push(retryInMs),
      delay,
      minBackoffMs: 100,
      maxBackoffMs: 500,
    });
    watch.start();
    for (let i = 0; i < 4; i += 1) await next();
    await until(() => lists.length > 0);
    expect(waits).toEqual([100, 200, 400, 500]);
    expect(errors).toEqual(waits);
    expect(watch.hasSynced).toBe(true);
    expect(lists[0]?.map((c) => c.metadata?.name)).toEqual(['cm']);
    await watch.stop();
  });

  it('is not synced while no list has succeeded', async () => {
    const { delay, next } = recordedDelay();
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: unreachableWatch(),
      path: '/api/v1/namespaces/x/configmaps',
      list: () => Promise.reject(new Error('forbidden')),
      onList: () => undefined,
      delay,
    });
    watch.start();
    await next();
    expect(watch.hasSynced).toBe(false);
    await watch.stop();
  });

  it('stops restarting once stopped', async () => {
    const { delay, waits } = recordedDelay();
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: unreachableWatch(),
      path: '/api/v1/namespaces/x/configmaps',
      list: () => Promise.reject(new Error('refused')),
      onList: () => undefined,
      delay,
    });
    watch.start();
    await until(() => waits.length === 1);
    await watch.stop();
    const before = waits.length;
    await new Promise((r) => setImmediate(r));
    expect(waits.length).toBe(before);
  });
});
