/** The docs list every error code and metric the code has, and nothing else (Fastify keeps its errors doc so). */
import { describe, expect, it } from 'vitest';
import { CATALOGUE } from '../../src/errors/index.js';
import { createMetrics } from '../../src/server/metrics.js';
import { tableRows, unquote } from './markdown-table.js';

describe('docs/errors.md', () => {
  const rows = tableRows('errors.md', 'code').map(([code = '', kind, status]) => ({
    code: unquote(code),
    kind,
    status,
  }));

  it('lists every code of src/errors/ once, with its kind and status, and no other', () => {
    const catalogue = CATALOGUE.map(({ code, kind, status }) => ({ code, kind, status: String(status ?? '') }));
    expect(rows).toEqual(catalogue);
  });

  it('has unique codes, all with the SI_ prefix', () => {
    const codes = CATALOGUE.map((entry) => entry.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^SI_[A-Z_]+$/);
  });
});

describe('docs/deliver-env.md failures table', () => {
  it('names each failure by a delivery code of src/errors/, each once', () => {
    const named = tableRows('deliver-env.md', 'failure').map(([, , code = '']) => unquote(code));
    const delivery = CATALOGUE.filter((entry) => entry.kind === 'delivery').map((entry) => entry.code);
    expect(named.filter((code) => !delivery.includes(code))).toEqual([]);
    expect(new Set(named).size).toBe(named.length);
  });
});

describe('docs/server.md metrics table', () => {
  it('names exactly the metrics the server registers', async () => {
    const metrics = createMetrics({ defaultMetrics: false, configLoadedAt: () => undefined, now: Date.now });
    const registered = (await metrics.registry.getMetricsAsJSON()).map((metric) => metric.name).sort();
    const documented = tableRows('server.md', 'metric')
      .map(([name = '']) => unquote(name))
      .sort();
    expect(documented).toEqual(registered);
  });
});

describe('docs/deliver-env.md metrics table', () => {
  it('names exactly the metrics deliver-env registers', async () => {
    const { createDeliveryMetrics } = await import('../../src/deliver/controller/metrics.js');
    const { poolPodMetrics } = await import('../../src/deliver/pools/pool-pod-metrics.js');
    const metrics = createDeliveryMetrics({
      defaultMetrics: false,
      queue: () => ({ depth: 0, oldestQueuedSeconds: 0, longestRunningSeconds: 0 }),
    });
    // run.ts registers the pool pods' instruments on the same registry (src/deliver/pools/pool-pod-upkeep.ts).
    poolPodMetrics(metrics.registry, {
      states: () => ({ fine: 0, missing: 0, stale: 0 }),
      replacement: () => ({ inFlight: 0, stoppedPools: 0 }),
    });
    const registered = (await metrics.registry.getMetricsAsJSON()).map((metric) => metric.name).sort();
    const documented = tableRows('deliver-env.md', 'metric')
      .map(([name = '']) => unquote(name))
      .sort();
    expect(documented).toEqual(registered);
  });
});
