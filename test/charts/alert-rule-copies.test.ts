/**
 * deliver-env's alert rules are written twice, as the chart's file and as the kustomize component's
 * PrometheusRule, the way the webhook's are: the two must hold the same groups, or one install alerts on what
 * the other does not. The webhook's pair is compared through real renders in test/e2e/helm-chart.e2e.test.ts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const read = (path: string): unknown => parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'));

describe("deliver-env's alert rules", () => {
  it('are the same in the chart and in manifests/components/deliver-env-monitoring', () => {
    const chart = read('charts/sandbox-injector/files/deliver-env-alert-rules.yaml');
    const component = read('manifests/components/deliver-env-monitoring/prometheusrule.yaml') as { spec: unknown };
    expect(component.spec).toEqual(chart);
    expect((chart as { groups: { rules: unknown[] }[] }).groups[0]?.rules).toHaveLength(7);
  });
});
