// ResilientWatch against a real kube-apiserver: a list read in small pages sees every one of 1,200 objects,
// each object is cached as the transform cuts it, and a watch whose connection goes silent (frozen by a TCP
// proxy, left open) is replaced by a fresh list once its silence deadline passes, so a change made during the
// freeze reaches the cache anyway.
import { KubeConfig, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClients, type KubeClients } from '../../src/kube-client/clients.js';
import { WatchSilentError } from '../../src/kube-client/guarded-watch.js';
import type { ListPage } from '../../src/kube-client/paged-list.js';
import { ResilientWatch } from '../../src/kube-client/resilient-watch.js';
import { waitUntil } from '../support/wait-until.js';
import { startCluster, type TestCluster } from './support/cluster.js';
import { startFreezableProxy, type FreezableProxy } from './support/freezable-proxy.js';

const MANY = 'paged';
const QUIET = 'quiet';
const COUNT = 1200;

let cluster: TestCluster;
let clients: KubeClients;
let proxy: FreezableProxy | undefined;
const watches: ResilientWatch<V1ConfigMap>[] = [];

/** Keeps what the test reads: identity and one key of data. */
const strip = (cm: V1ConfigMap): V1ConfigMap => ({
  metadata: {
    name: cm.metadata?.name,
    namespace: cm.metadata?.namespace,
    resourceVersion: cm.metadata?.resourceVersion,
  },
  data: cm.data?.mark === undefined ? {} : { mark: cm.data.mark },
});

/** How long each wait for the watch may take, and how often it looks. */
const WAIT = { timeoutMs: 60_000, intervalMs: 50 } as const;

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.ensureNamespace(MANY);
  await cluster.ensureNamespace(QUIET);
  const items = Array.from({ length: COUNT }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `cm-${i}`, namespace: MANY },
    data: { mark: String(i), filler: 'x'.repeat(2000) },
  }));
  await cluster.kubectlOk(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
  clients = createKubeClients(cluster.kubeconfigPath);
});

afterAll(async () => {
  for (const watch of watches) await watch.stop();
  await proxy?.close();
  await cluster?.stop();
});

describe('a paged list', () => {
  it('reads all 1,200 objects 100 at a time, and caches them and their changes as the transform cuts them', async () => {
    const asked: ListPage[] = [];
    let listed: V1ConfigMap[] = [];
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: clients.watch,
      path: `/api/v1/namespaces/${MANY}/configmaps`,
      pageSize: 100,
      list: (page) => {
        asked.push(page);
        return clients.core.listNamespacedConfigMap({ namespace: MANY, ...page });
      },
      transform: strip,
      onList: (items) => (listed = items),
    });
    watches.push(watch);
    watch.start();
    await waitUntil(() => watch.hasSynced, { ...WAIT, what: 'the first list' });

    expect(asked.length).toBeGreaterThanOrEqual(COUNT / 100);
    expect(asked.every((page) => page.limit === 100)).toBe(true);
    expect(asked.slice(1).every((page) => typeof page._continue === 'string')).toBe(true);
    const names = new Set(listed.map((cm) => cm.metadata?.name));
    expect(names.size).toBe(COUNT);
    expect(listed).toHaveLength(COUNT);
    expect(watch.list(MANY)).toHaveLength(COUNT);
    expect(watch.get('cm-1199', MANY)?.data).toEqual({ mark: '1199' });
    expect(watch.list(MANY).every((cm) => cm.data?.filler === undefined)).toBe(true);

    await cluster.kubectlOk([
      '-n',
      MANY,
      'patch',
      'configmap',
      'cm-7',
      '--type=merge',
      '-p',
      '{"data":{"mark":"seven"}}',
    ]);
    await waitUntil(() => watch.get('cm-7', MANY)?.data, {
      ...WAIT,
      what: 'the watched change',
      until: (data) => data?.mark === 'seven',
    });
    expect(watch.get('cm-7', MANY)).toEqual({
      metadata: expect.objectContaining({ name: 'cm-7', namespace: MANY }) as unknown,
      data: { mark: 'seven' },
    });
  });
});

describe('a silent watch', () => {
  it('is given up after its deadline and listed again, so a change made while it was frozen shows', async () => {
    const server = new URL(cluster.server);
    proxy = await startFreezableProxy({ host: server.hostname, port: Number(server.port) });
    // Only the watch goes through the proxy: it stands for the watch's own connection going dead, and every
    // watch request opens a connection of its own. The list keeps the direct, kept-alive client.
    const throughProxy = new KubeConfig();
    throughProxy.loadFromFile(cluster.kubeconfigPath);
    throughProxy.clusters = throughProxy.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${proxy?.port}` }));
    let lists = 0;
    const errors: unknown[] = [];
    const watch = new ResilientWatch<V1ConfigMap>({
      watch: new Watch(throughProxy),
      path: `/api/v1/namespaces/${QUIET}/configmaps`,
      list: (page) => {
        lists += 1;
        return clients.core.listNamespacedConfigMap({ namespace: QUIET, ...page });
      },
      transform: strip,
      silenceMs: 3000,
      onList: () => undefined,
      onError: (error) => errors.push(error),
    });
    watches.push(watch);
    watch.start();
    await waitUntil(() => watch.hasSynced, { ...WAIT, what: 'the first list' });
    const mark = (name: string, value: string) =>
      cluster.kubectlOk(['-n', QUIET, 'create', 'configmap', name, `--from-literal=mark=${value}`]);

    await mark('before', 'live');
    await waitUntil(() => watch.get('before', QUIET), { ...WAIT, what: 'the change through the live watch' });
    const listsBefore = lists;
    expect(proxy.freeze()).toBeGreaterThanOrEqual(1);

    await mark('during', 'frozen');
    await waitUntil(() => watch.get('during', QUIET)?.data, {
      ...WAIT,
      what: 'the change made during the freeze',
      until: (data) => data?.mark === 'frozen',
    });
    expect(lists).toBeGreaterThan(listsBefore);
    expect(errors.some((error) => error instanceof WatchSilentError)).toBe(true);
    expect(watch.get('before', QUIET)?.data).toEqual({ mark: 'live' });
  });
});
