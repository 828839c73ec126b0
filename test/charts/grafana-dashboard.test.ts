/**
 * The Grafana dashboard, written twice as the alert rules are (the chart's file, and the kustomize component's
 * copy): the two are the same, the JSON is a dashboard, it has the panels the operators were promised, and every
 * query names only metrics the code registers, so a renamed metric cannot leave a panel empty.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createDeliveryMetrics } from '../../src/deliver/controller/metrics.js';
import { poolPodMetrics } from '../../src/deliver/pools/pool-pod-metrics.js';
import { Histogram } from 'prom-client';
import { createMetrics } from '../../src/server/metrics.js';

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const CHART_COPY = 'charts/sandbox-injector/files/grafana-dashboard.json';
const COMPONENT_COPY = 'manifests/components/grafana-dashboard/grafana-dashboard.json';

interface Panel {
  type: string;
  title: string;
  datasource?: { uid?: string };
  targets?: { expr?: string; datasource?: { uid?: string } }[];
}

const dashboard = JSON.parse(read(CHART_COPY)) as { uid: string; title: string; panels: Panel[] };
const queries = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr ?? ''));

/** Every metric name either process registers; a histogram's series add _bucket, _sum and _count. */
async function registered(): Promise<Set<string>> {
  const webhook = createMetrics({ defaultMetrics: false, configLoadedAt: () => undefined, now: Date.now });
  const deliver = createDeliveryMetrics({
    defaultMetrics: false,
    queue: () => ({ depth: 0, oldestQueuedSeconds: 0, longestRunningSeconds: 0 }),
  });
  poolPodMetrics(deliver.registry, {
    states: () => ({ fine: 0, missing: 0, stale: 0 }),
    replacement: () => ({ inFlight: 0, stoppedPools: 0 }),
  });
  const names = new Set<string>();
  for (const registry of [webhook.registry, deliver.registry]) {
    for (const metric of await registry.getMetricsAsJSON()) {
      names.add(metric.name);
      if (registry.getSingleMetric(metric.name) instanceof Histogram)
        for (const end of ['_bucket', '_sum', '_count']) names.add(metric.name + end);
    }
  }
  return names;
}

/** The metric names `exprs` query that are not in `known`. */
function unknownMetrics(exprs: readonly string[], known: ReadonlySet<string>): string[] {
  const named = new Set(exprs.flatMap((expr) => expr.match(/\bsandbox_injector_[a-z0-9_]+/g) ?? []));
  return [...named].filter((name) => !known.has(name));
}

describe('the Grafana dashboard', () => {
  it('is the same in the chart and in manifests/components/grafana-dashboard', () => {
    expect(read(COMPONENT_COPY)).toBe(read(CHART_COPY));
  });

  it('is a dashboard whose every panel queries the chosen Prometheus', () => {
    expect(dashboard).toMatchObject({ uid: 'sandbox-injector', title: 'sandbox-injector' });
    const graphs = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(graphs.length).toBeGreaterThan(0);
    for (const panel of graphs) {
      expect(panel.datasource?.uid, panel.title).toBe('${datasource}');
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.datasource?.uid, panel.title).toBe('${datasource}');
    }
  });

  it('has the panels promised: admissions, denials, latency, deliveries, claim to env, queue, pool pods, replacements', () => {
    const titled = (title: string): string[] =>
      (dashboard.panels.find((panel) => panel.title === title)?.targets ?? []).map((target) => target.expr ?? '');
    expect(titled('Admissions by outcome').join()).toContain('sandbox_injector_admissions_total');
    expect(titled('Denials by code').join()).toContain('sandbox_injector_denials_total');
    expect(titled('Admission latency').join()).toContain('histogram_quantile(0.99');
    expect(titled('Deliveries by outcome').join()).toContain('sandbox_injector_env_deliveries_total');
    const claimToEnv = titled('Claim to env delivered').join();
    expect(claimToEnv).toContain('histogram_quantile(0.5, sum by (le) (rate(sandbox_injector_env_claim_to_ready_seconds_bucket');
    expect(claimToEnv).toContain('histogram_quantile(0.99, sum by (le) (rate(sandbox_injector_env_claim_to_ready_seconds_bucket');
    const queue = titled('Work queue').join();
    expect(queue).toContain('sandbox_injector_deliver_queue_depth');
    expect(queue).toContain('sandbox_injector_deliver_queue_oldest_seconds');
    expect(titled('Pool pods by state').join()).toContain('max by (state) (sandbox_injector_pool_pods');
    expect(titled('Replacements').join()).toContain('sandbox_injector_pool_pod_replacements_total');
  });

  it('names in its queries only metrics the webhook or deliver-env registers', async () => {
    const known = await registered();
    expect(new Set(queries.flatMap((expr) => expr.match(/\bsandbox_injector_[a-z0-9_]+/g) ?? [])).size).toBeGreaterThanOrEqual(10);
    expect(unknownMetrics(queries, known)).toEqual([]);
    // The check fails on a metric no code registers.
    const misspelt = queries.map((expr) => expr.replace('sandbox_injector_pool_pods{', 'sandbox_injector_pool_podz{'));
    expect(unknownMetrics(misspelt, known)).toEqual(['sandbox_injector_pool_podz']);
  });
});
