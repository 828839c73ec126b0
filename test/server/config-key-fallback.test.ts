/**
 * sandbox_injector_config_key_fallback{key}: fed the way serve feeds it (the store's update report, passed to
 * metrics.configReload), it has a series exactly for the keys on their last valid version, which the
 * SandboxInjectorConfigKeyStale alert (manifests/components/monitoring) counts on.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/server/metrics.js';
import { InjectionConfigStore } from '../../src/config/injection-config.js';
import { loadConformanceCases } from '../support/conformance.js';

const configMap = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic')?.configMap;
const good = (configMap?.data as Record<string, string> | undefined)?.['agent-runtime'];
if (good === undefined) throw new Error('conformance case agent-runtime-basic has no agent-runtime key');
const BAD = '{"mainContainer": "not an object"';

interface Rig {
  load: (data: Record<string, string> | undefined) => void;
  failedLoad: () => void;
  scrape: () => Promise<string>;
}

function rig(): Rig {
  const store = new InjectionConfigStore();
  const metrics = createMetrics({ defaultMetrics: false, configLoadedAt: () => store.loadedAt, now: Date.now });
  return {
    load: (data) => metrics.configReload('success', store.update(data).invalidKeys),
    failedLoad: () => metrics.configReload('failure', undefined),
    scrape: () => metrics.registry.metrics(),
  };
}

/** The keys with a fallback series, and their values. */
function fallbackSeries(text: string): Record<string, string> {
  const series: Record<string, string> = {};
  for (const [, key = '', value = ''] of text.matchAll(
    /^sandbox_injector_config_key_fallback\{key="([^"]*)"\} (\S+)$/gm,
  )) {
    series[key] = value;
  }
  return series;
}

describe('sandbox_injector_config_key_fallback', () => {
  it('has no series while every key is valid', async () => {
    const { load, scrape } = rig();
    load({ 'agent-runtime': good, csi: good });
    const text = await scrape();
    expect(text).toMatch(/^# TYPE sandbox_injector_config_key_fallback gauge$/m);
    expect(fallbackSeries(text)).toEqual({});
  });

  it('is 1 for a key that went bad after a valid version, and only for that key', async () => {
    const { load, scrape } = rig();
    load({ 'agent-runtime': good, csi: good });
    load({ 'agent-runtime': BAD, csi: good });
    const text = await scrape();
    expect(fallbackSeries(text)).toEqual({ 'agent-runtime': '1' });
    expect(text).toMatch(/^sandbox_injector_config_invalid_keys 1$/m);
  });

  it('has no series for a key that was never valid (its runtime is denied instead, not on a fallback)', async () => {
    const { load, scrape } = rig();
    load({ 'agent-runtime': good, csi: BAD });
    const text = await scrape();
    expect(fallbackSeries(text)).toEqual({});
    expect(text).toMatch(/^sandbox_injector_config_invalid_keys 1$/m);
  });

  it('drops the series when the key is fixed', async () => {
    const { load, scrape } = rig();
    load({ 'agent-runtime': good, csi: good });
    load({ 'agent-runtime': BAD, csi: BAD });
    expect(fallbackSeries(await scrape())).toEqual({ 'agent-runtime': '1', csi: '1' });
    load({ 'agent-runtime': good, csi: BAD });
    expect(fallbackSeries(await scrape())).toEqual({ csi: '1' });
  });

  it('drops the series when the key leaves the ConfigMap, or the ConfigMap goes', async () => {
    const { load, scrape } = rig();
    load({ 'agent-runtime': good, csi: good });
    load({ 'agent-runtime': BAD, csi: BAD });
    load({ 'agent-runtime': BAD });
    expect(fallbackSeries(await scrape())).toEqual({ 'agent-runtime': '1' });
    load(undefined);
    expect(fallbackSeries(await scrape())).toEqual({});
  });

  it('keeps the series through a load that read nothing (the config in use did not change)', async () => {
    const { load, failedLoad, scrape } = rig();
    load({ 'agent-runtime': good });
    load({ 'agent-runtime': BAD });
    failedLoad();
    expect(fallbackSeries(await scrape())).toEqual({ 'agent-runtime': '1' });
  });
});
