/** The plain-HTTP side listener: /metrics with the admission metrics, and the probes again. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALIVE, readiness } from '../../src/server/health.js';
import { startMetricsServer, type MetricsServer } from '../../src/server/metrics-server.js';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { postJson } from './support/https-client.js';
import { servingPki, temporaryDirectory } from './support/pki.js';
import { startTestServer, type TestServer } from './support/server.js';

const cases = loadConformanceCases();
const byName = (name: string): (typeof cases)[number] => {
  const found = cases.find((c) => c.name === name);
  if (found === undefined) throw new Error(`conformance case ${name} is missing`);
  return found;
};

let server: TestServer;
let metricsServer: MetricsServer;
let ready = true;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('metrics');
  removeDir = remove;
  const pki = await servingPki(dir);
  server = await startTestServer({ tls: pki, caFile: pki.caCertFile });
  metricsServer = await startMetricsServer(
    { registry: server.metrics.registry, ready: () => ready, onError: () => undefined },
    '127.0.0.1',
    0,
  );
});

afterAll(async () => {
  await metricsServer.close();
  await server.close();
  await removeDir();
});

async function get(path: string, method = 'GET'): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`http://127.0.0.1:${metricsServer.port}${path}`, { method });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

async function review(name: string): Promise<void> {
  const testCase = byName(name);
  server.setConfig(testCase.configMap?.data as Record<string, string> | undefined);
  const result = await postJson(`${server.url}/mutate`, reviewFor(testCase.pod), { ca: server.caPem });
  expect(result.status).toBe(200);
}

describe('GET /metrics on the metrics port', () => {
  it('exposes admissions by outcome, skips by reason, latency, config and certificate metrics', async () => {
    await review('agent-runtime-basic');
    await review('no-runtimes-unchanged');
    await review('missing-key-denied');
    await review('name-conflict-skips-only-that-runtime');
    server.metrics.tlsCertificate(new Date('2030-01-01T00:00:00Z'));
    server.metrics.configReload('failure', undefined);

    const { status, text, type } = await get('/metrics');

    expect(status).toBe(200);
    expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text).toMatch(/^sandbox_injector_admissions_total\{outcome="injected"\} 2$/m);
    expect(text).toMatch(/^sandbox_injector_admissions_total\{outcome="unchanged"\} 1$/m);
    expect(text).toMatch(/^sandbox_injector_admissions_total\{outcome="denied"\} 1$/m);
    expect(text).toMatch(/^sandbox_injector_admissions_total\{outcome="error"\} 0$/m);
    expect(text).toMatch(/^sandbox_injector_runtime_skips_total\{runtime="[^"]+",reason="[a-z-]+"\} 1$/m);
    expect(text).toMatch(/^sandbox_injector_admission_duration_seconds_count\{outcome="injected"\} 2$/m);
    expect(text).toMatch(/^sandbox_injector_config_reloads_total\{result="failure"\} 1$/m);
    expect(text).toMatch(/^sandbox_injector_config_age_seconds \d+(\.\d+)?$/m);
    expect(text).toMatch(/^sandbox_injector_tls_certificate_not_after_seconds 1893456000$/m);
  });

  it('also answers the probes, for kubelet when the TLS port requires client certificates', async () => {
    ready = true;
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(200);
    ready = false;
    expect((await get('/readyz')).status).toBe(503);
    expect((await get('/healthz')).status).toBe(200);
  });

  it('answers the probes in the JSON the webhook port answers', async () => {
    for (const value of [true, false]) {
      ready = value;
      for (const [path, expected] of [
        ['/healthz', ALIVE],
        ['/readyz', readiness(value)],
      ] as const) {
        const { status, text, type } = await get(path);
        expect(type).toBe('application/json; charset=utf-8');
        expect({ code: status, body: JSON.parse(text) as unknown }).toEqual(expected);
      }
    }
  });

  it('is 404 elsewhere and 405 for other methods', async () => {
    expect((await get('/nope')).status).toBe(404);
    expect((await get('/metrics', 'POST')).status).toBe(405);
  });
});

describe('the config age', () => {
  it('is NaN before the first config load', async () => {
    const { createMetrics } = await import('../../src/server/metrics.js');
    const metrics = createMetrics({ defaultMetrics: false, configLoadedAt: () => undefined, now: Date.now });
    // prom-client writes "Nan"; Prometheus parses NaN case-insensitively.
    expect(await metrics.registry.metrics()).toMatch(/^sandbox_injector_config_age_seconds nan$/im);
  });

  it('counts from the last load on the injected clock', async () => {
    const { createMetrics } = await import('../../src/server/metrics.js');
    const metrics = createMetrics({ defaultMetrics: false, configLoadedAt: () => 1_000, now: () => 61_000 });
    expect(await metrics.registry.metrics()).toMatch(/^sandbox_injector_config_age_seconds 60$/m);
  });
});
