/**
 * The config file source (src/config/config-file-watch.ts): load at start, reload on change, keep the last
 * valid data on a bad file.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/time/clock.js';
import { directoryWatcher } from '../../src/file-watch/directory-watch.js';
import {
  startConfigFileWatch,
  type ConfigFileWatch,
  type ConfigFileWatchDeps,
  type ConfigLoadResult,
} from '../../src/config/config-file-watch.js';
import { InjectionConfigStore } from '../../src/config/injection-config.js';
import { loadConformanceCases } from '../support/conformance.js';
import { createKubeVolume, swapKubeVolume } from '../server/support/kube-volume.js';
import { temporaryDirectory } from '../server/support/pki.js';
import { recordingLogger } from '../server/support/server.js';

const configMap = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic')?.configMap;
if (configMap === undefined || configMap === null) throw new Error('conformance case agent-runtime-basic is missing');
const manifest = JSON.stringify(configMap);
const agentRuntimeOnly = JSON.stringify({
  ...configMap,
  data: { 'agent-runtime': (configMap.data as Record<string, string>)['agent-runtime'] },
});

let root: string;
let removeDir: () => Promise<void>;
let counter = 0;
beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('config-watch');
  root = dir;
  removeDir = remove;
});
afterAll(() => removeDir());

async function freshDir(): Promise<string> {
  counter += 1;
  const dir = `${root}/config-${counter}`;
  await mkdir(dir);
  return dir;
}

interface Rig {
  watch: ConfigFileWatch;
  store: InjectionConfigStore;
  results: ConfigLoadResult[];
  logs: ReturnType<typeof recordingLogger>['lines'];
  updates: () => number;
  /** Resolves after the first load result from now on that leaves `test` true of the store. */
  loadedUntil: (test: (store: InjectionConfigStore) => boolean) => Promise<void>;
}

/** The watcher with a do-nothing directory watch: reloads happen when the test calls reload(). */
async function rig(file: string, overrides: Partial<ConfigFileWatchDeps> = {}): Promise<Rig> {
  const store = new InjectionConfigStore();
  let updates = 0;
  const results: ConfigLoadResult[] = [];
  const waiters: { test: (store: InjectionConfigStore) => boolean; resolve: () => void }[] = [];
  const logger = recordingLogger();
  const watch = await startConfigFileWatch({
    file,
    store: {
      update: (data) => {
        updates += 1;
        return store.update(data);
      },
    },
    watch: () => ({ close: () => undefined }),
    logger,
    onResult: (result) => {
      results.push(result);
      for (const waiter of waiters.filter((w) => w.test(store))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    },
    ...overrides,
  });
  const loadedUntil = (test: (store: InjectionConfigStore) => boolean): Promise<void> =>
    new Promise((resolve) => waiters.push({ test, resolve }));
  return { watch, store, results, logs: logger.lines, updates: () => updates, loadedUntil };
}

function keys(store: InjectionConfigStore): string[] {
  const snapshot = store.snapshot();
  return snapshot.present ? [...snapshot.entries.keys()].sort() : [];
}

describe('startConfigFileWatch', () => {
  it('loads the manifest at start', async () => {
    const file = `${await freshDir()}/injection-config.yaml`;
    await writeFile(file, manifest);
    const { watch, store, results } = await rig(file);
    expect(watch.first).toEqual({ kind: 'loaded', absent: false, invalidKeys: [], unknownFields: [] });
    expect(results).toEqual([watch.first]);
    expect(keys(store)).toEqual(['agent-runtime', 'csi', 'traffic-proxy']);
    expect(store.loadedAt).toBeDefined();
  });

  it('keeps the last valid data when the file turns bad, and says so', async () => {
    const file = `${await freshDir()}/config.yaml`;
    await writeFile(file, manifest);
    const { watch, store, results, logs, updates } = await rig(file);

    await writeFile(file, 'kind: [unclosed');
    const result = await watch.reload();

    expect(result.kind).toBe('failed');
    expect(result.kind === 'failed' && result.message).toContain(file);
    expect(updates()).toBe(1);
    expect(keys(store)).toEqual(['agent-runtime', 'csi', 'traffic-proxy']);
    expect(results.map((r) => r.kind)).toEqual(['loaded', 'failed']);
    expect(logs.at(-1)).toMatchObject({ level: 'warn', fields: { file } });
  });

  it('picks up the next good version after a bad one', async () => {
    const file = `${await freshDir()}/config.yaml`;
    await writeFile(file, manifest);
    const { watch, store } = await rig(file);
    await writeFile(file, 'apiVersion: v1\nkind: Secret\n');
    expect((await watch.reload()).kind).toBe('failed');
    await writeFile(file, agentRuntimeOnly);
    expect((await watch.reload()).kind).toBe('loaded');
    expect(keys(store)).toEqual(['agent-runtime']);
  });

  it('does not touch the store when the bytes did not change', async () => {
    const file = `${await freshDir()}/config.yaml`;
    await writeFile(file, manifest);
    const { watch, updates } = await rig(file);
    expect(await watch.reload()).toEqual({ kind: 'unchanged' });
    expect(updates()).toBe(1);
  });

  it('treats a missing file as "no ConfigMap", with a warning', async () => {
    const file = `${await freshDir()}/absent.yaml`;
    const { watch, store, logs } = await rig(file);
    expect(watch.first).toEqual({ kind: 'loaded', absent: true, invalidKeys: [], unknownFields: [] });
    expect(store.snapshot().present).toBe(false);
    expect(store.loadedAt).toBeDefined();
    expect(logs[0]).toMatchObject({ level: 'warn' });
  });

  it('leaves the store unloaded when the first read fails, so the server reports not ready', async () => {
    const file = `${await freshDir()}/config.yaml`;
    await writeFile(file, 'not: a configmap');
    const { watch, store } = await rig(file);
    expect(watch.first.kind).toBe('failed');
    expect(store.loadedAt).toBeUndefined();
  });

  it('logs an invalid key with what happens to it; the store keeps its last valid version', async () => {
    const file = `${await freshDir()}/config.yaml`;
    await writeFile(file, manifest);
    const { watch, store, logs } = await rig(file);
    const broken = JSON.parse(manifest) as { data: Record<string, string> };
    broken.data.csi = '{"mainContainer": ';
    await writeFile(file, JSON.stringify(broken));

    const result = await watch.reload();

    expect(result).toMatchObject({ kind: 'loaded', invalidKeys: [{ key: 'csi', fellBack: true }] });
    expect(logs.at(-1)).toMatchObject({ level: 'warn', fields: { key: 'csi' } });
    expect(logs.at(-1)?.message).toContain('last valid version');
    const snapshot = store.snapshot();
    expect(snapshot.present && snapshot.valid.has('csi')).toBe(true);
  });

  it('logs the fields Go would ignore in one line for the config version, and uses the rest', async () => {
    const file = `${await freshDir()}/config.yaml`;
    const withUnknown = JSON.parse(manifest) as { data: Record<string, string> };
    withUnknown.data.csi = '{"csiSidecar":[{"name":"s","imagePullSecret":"x"}],"sidecar":[]}';
    withUnknown.data.gpu = '{"Volume":[{"name":"g","hostpath":{"path":"/dev"}}],"extra":1}';
    await writeFile(file, JSON.stringify(withUnknown));
    const { watch, logs } = await rig(file);
    expect(watch.first).toMatchObject({ kind: 'loaded', invalidKeys: [] });
    const lines = logs.filter((line) => line.message.includes('ignores'));
    expect(lines).toHaveLength(1);
    expect(lines[0]?.fields).toMatchObject({
      fields: ['csi/csiSidecar/0/imagePullSecret', 'csi/sidecar', 'gpu/extra'],
    });
  });

  it('fails to start when the directory cannot be watched', async () => {
    const watch = directoryWatcher({ debounceMs: 10, resyncMs: 0, clock: systemClock, onError: () => undefined });
    await expect(rig(`${root}/no-such-dir/config.yaml`, { watch })).rejects.toThrow(/ENOENT/);
  });
});

describe('with the real directory watcher', () => {
  it('follows a ConfigMap volume ..data swap', async () => {
    const dir = `${await freshDir()}/volume`;
    await createKubeVolume(dir, { 'injection-config.yaml': manifest });
    const watch = directoryWatcher({ debounceMs: 50, resyncMs: 0, clock: systemClock, onError: () => undefined });
    const { watch: configWatch, store, loadedUntil } = await rig(`${dir}/injection-config.yaml`, { watch });

    const reloaded = loadedUntil((loaded) => keys(loaded).length === 1);
    await swapKubeVolume(dir, { 'injection-config.yaml': agentRuntimeOnly });
    await reloaded;

    expect(keys(store)).toEqual(['agent-runtime']);
    await configWatch.close();
  });

  it('follows an in-place rewrite too (an editor, not the kubelet)', async () => {
    const dir = await freshDir();
    await writeFile(`${dir}/config.yaml`, manifest);
    const watch = directoryWatcher({ debounceMs: 50, resyncMs: 0, clock: systemClock, onError: () => undefined });
    const { watch: configWatch, store, loadedUntil } = await rig(`${dir}/config.yaml`, { watch });

    const reloaded = loadedUntil((loaded) => keys(loaded).length === 1);
    await rm(`${dir}/config.yaml`);
    await writeFile(`${dir}/config.yaml`, agentRuntimeOnly);
    await reloaded;

    expect(keys(store)).toEqual(['agent-runtime']);
    await configWatch.close();
  });
});
