/** The routes, through `app.inject()`: no sockets, the whole Fastify pipeline (parsing, limits, errors). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Server } from 'node:https';
import type { ReviewDeps } from '../../src/admission/review.js';
import { BODY_LIMIT_BYTES, buildApp } from '../../src/server/app.js';
import { createMetrics, type ServerMetrics } from '../../src/server/metrics.js';
import { httpsServerOptions, loadTlsMaterial, type TlsMaterial } from '../../src/server/tls/material.js';
import type { TransportLimits } from '../../src/server/transport.js';
import { InjectionConfigStore } from '../../src/config/injection-config.js';
import { runtimesFromAnnotations } from '../../src/sandbox/runtime-selection.js';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { servingPki, temporaryDirectory } from './support/pki.js';
import { recordingLogger, type LogLine } from './support/server.js';

let material: TlsMaterial;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('app');
  material = await loadTlsMaterial(await servingPki(dir));
  removeDir = remove;
});
afterAll(() => removeDir());

interface Harness {
  app: FastifyInstance<Server>;
  logs: LogLine[];
  metrics: ServerMetrics;
  setReady: (ready: boolean) => void;
}

const basic = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic');
if (basic === undefined) throw new Error('conformance case agent-runtime-basic is missing');

function harness(review?: ReviewDeps, limits?: Partial<TransportLimits>): Harness {
  const store = new InjectionConfigStore();
  store.update(basic?.configMap?.data as Record<string, string>);
  let ready = true;
  const logger = recordingLogger();
  const metrics = createMetrics({ defaultMetrics: false, configLoadedAt: () => store.loadedAt, now: Date.now });
  const app = buildApp({
    https: httpsServerOptions(material),
    review: review ?? { config: () => store.snapshot(), selectRuntimes: (pod) => runtimesFromAnnotations(pod) },
    ready: () => ready,
    ...(limits === undefined ? {} : { limits }),
    logger,
    metrics,
  });
  return { app, logs: logger.lines, metrics, setReady: (value) => (ready = value) };
}

async function metricValue(metrics: ServerMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)?.get();
  const match = metric?.values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value));
  return match?.value ?? Number.NaN;
}

const json = { 'content-type': 'application/json' };

describe('health endpoints', () => {
  it('GET /healthz is 200 whatever the readiness', async () => {
    const { app, setReady } = harness();
    setReady(false);
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz follows the ready() dependency', async () => {
    const { app, setReady } = harness();
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    setReady(false);
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'not ready' });
  });
});

describe('POST /mutate', () => {
  it('answers a review with the AdmissionReview, logs one line and counts the outcome', async () => {
    const { app, logs, metrics } = harness();
    const res = await app.inject({ method: 'POST', url: '/mutate', payload: reviewFor(basic.pod, 'u-1') });

    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json<{ kind: string; response: { uid: string; allowed: boolean; patchType: string } }>();
    expect(body.kind).toBe('AdmissionReview');
    expect(body.response).toMatchObject({ uid: 'u-1', allowed: true, patchType: 'JSONPatch' });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: 'info', message: 'admission' });
    expect(Object.keys(logs[0]?.fields ?? {}).sort()).toEqual(
      [
        'decision',
        'durationMs',
        'namespace',
        'patchBytes',
        'pod',
        'present',
        'runtimes',
        'skipped',
        'uid',
        'warnings',
      ].sort(),
    );
    expect(await metricValue(metrics, 'sandbox_injector_admissions_total', { outcome: 'injected' })).toBe(1);
  });

  it('logs a denial with its message, so the log says why', async () => {
    const { app, logs } = harness();
    const pod = structuredClone(basic.pod) as { metadata: { annotations: Record<string, string> } };
    pod.metadata.annotations['agents.kruise.io/runtimes'] = 'gpu';
    const res = await app.inject({ method: 'POST', url: '/mutate', payload: reviewFor(pod, 'u-2') });
    expect(res.json<{ response: { allowed: boolean } }>().response.allowed).toBe(false);
    expect(logs[0]?.fields).toMatchObject({
      decision: 'denied',
      message: expect.stringContaining('runtime "gpu" has no key') as unknown,
    });
  });

  it('cuts what the log line takes from the request: names, uid and lists', async () => {
    const { app, logs } = harness();
    const pod = structuredClone(basic.pod) as {
      metadata: { generateName?: string; name?: string; annotations: Record<string, string> };
    };
    pod.metadata.name = 'p'.repeat(5000);
    const runtimes = Array.from({ length: 40 }, (_, i) => `runtime-${i}-${'r'.repeat(300)}`);
    pod.metadata.annotations['agents.kruise.io/runtimes'] = runtimes.join(',');
    await app.inject({ method: 'POST', url: '/mutate', payload: reviewFor(pod, 'u'.repeat(1000)) });
    const fields = logs[0]?.fields as { uid: string; pod: string; runtimes: string[]; message?: string };
    expect(fields.uid).toBe(`${'u'.repeat(253)}...(747 more characters)`);
    expect(fields.pod).toBe(`${'p'.repeat(253)}...(4747 more characters)`);
    expect(fields.runtimes).toHaveLength(17);
    expect(fields.runtimes.at(-1)).toBe('...(24 more)');
    expect(fields.runtimes[0]).toMatch(/^runtime-0-r+\.\.\.\(\d+ more characters\)$/);
    expect(fields.runtimes[0]?.length).toBeLessThan(300);
    expect(JSON.stringify(logs[0]).length).toBeLessThan(16 * 1024);
  });

  it('never logs env values or pod contents', async () => {
    const { app, logs } = harness();
    const pod = structuredClone(basic.pod) as { spec: { containers: { env?: unknown[] }[] } };
    const container = pod.spec.containers[0];
    if (container === undefined) throw new Error('case has no container');
    container.env = [{ name: 'API_TOKEN', value: 'very-secret-value' }];
    await app.inject({ method: 'POST', url: '/mutate', payload: reviewFor(pod) });
    const written = JSON.stringify(logs);
    expect(written).not.toContain('very-secret-value');
    expect(written).not.toContain('API_TOKEN');
  });

  it('malformed JSON is 400 with a message, and counted as a bad request', async () => {
    const { app, metrics } = harness();
    const res = await app.inject({ method: 'POST', url: '/mutate', headers: json, payload: '{"apiVersion": ' });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ message: string }>().message).toMatch(/JSON/i);
    expect(await metricValue(metrics, 'sandbox_injector_admissions_total', { outcome: 'bad_request' })).toBe(1);
  });

  it('an empty JSON body is 400', async () => {
    const { app } = harness();
    const res = await app.inject({ method: 'POST', url: '/mutate', headers: json, payload: '' });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ message: string }>().message).not.toBe('');
  });

  it('a review without request is 400 with a message, never an allowing 200', async () => {
    const { app, logs } = harness();
    const res = await app.inject({
      method: 'POST',
      url: '/mutate',
      payload: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json<{ message: string }>().message).toMatch(/request/);
    expect(logs[0]).toMatchObject({ level: 'warn', message: 'admission refused' });
  });

  it.each([
    ['text/plain', 'hello'],
    ['application/x-www-form-urlencoded', 'a=b'],
  ])('content type %s is refused with 415 and a message', async (contentType, payload) => {
    const { app } = harness();
    const res = await app.inject({ method: 'POST', url: '/mutate', headers: { 'content-type': contentType }, payload });
    expect(res.statusCode).toBe(415);
    expect(res.json<{ message: string }>().message).toMatch(/content-type/i);
  });

  it('a body over the 4 MiB limit (3 MiB kube-apiserver request plus envelope) is 413', async () => {
    const { app, metrics } = harness();
    const payload = `{"pad":"${'x'.repeat(BODY_LIMIT_BYTES)}"}`;
    const res = await app.inject({ method: 'POST', url: '/mutate', headers: json, payload });
    expect(res.statusCode).toBe(413);
    expect(res.json<{ message: string }>().message).not.toBe('');
    expect(await metricValue(metrics, 'sandbox_injector_admissions_total', { outcome: 'bad_request' })).toBe(1);
  });

  it('a review near the limit is still served', async () => {
    const { app } = harness();
    const pod = structuredClone(basic.pod) as { metadata: { labels: Record<string, string> } };
    pod.metadata.labels.padding = 'x'.repeat(BODY_LIMIT_BYTES - 4096);
    const res = await app.inject({ method: 'POST', url: '/mutate', payload: reviewFor(pod) });
    expect(res.statusCode).toBe(200);
  });

  describe('a large body: its labels and annotations are measured in the text', () => {
    /** The review's text with these annotations, and `after` spliced in after the annotations member. */
    function largeReview(annotations: Record<string, unknown>, after = ''): string {
      const pod = structuredClone(basic?.pod) as { metadata: { annotations?: Record<string, unknown> } };
      pod.metadata.annotations = { ...pod.metadata.annotations, ...annotations };
      const text = JSON.stringify(reviewFor(pod, 'large'));
      const end = text.indexOf('}', text.indexOf('"annotations":')) + 1;
      return text.slice(0, end) + after + text.slice(end);
    }
    const over: Record<string, string> = {};
    for (let i = 0; i < 300; i++) over[`example.com/a${i}`] = 'v'.repeat(1000);

    const denial = async (payload: string): Promise<{ allowed: boolean; status?: { message: string } }> => {
      const { app } = harness();
      const res = await app.inject({ method: 'POST', url: '/mutate', headers: json, payload });
      expect(res.statusCode).toBe(200);
      return res.json<{ response: { allowed: boolean; status?: { message: string } } }>().response;
    };

    it("denies annotations past 256 KiB with the walk's message", async () => {
      const answer = await denial(largeReview(over));
      expect(answer.allowed).toBe(false);
      expect(answer.status?.message).toContain('metadata.annotations exceed 262144 bytes');
    });

    it('denies a value that is not a string, naming it as the walk does', async () => {
      const answer = await denial(largeReview({ 'example.com/n': 7, ...over }));
      expect(answer.status?.message).toContain('field object.metadata.annotations.example.com/n must be string');
    });

    it('stops at the limit: a later duplicate of the map, which the parsed body keeps instead, is not read', async () => {
      // The walk of the parsed body would see only the empty duplicate and admit; the text says too large first.
      const answer = await denial(largeReview(over, ',"annotations":{}'));
      expect(answer.allowed).toBe(false);
      expect(answer.status?.message).toContain('metadata.annotations exceed');
    });

    it('admits a large body within the limits, as before', async () => {
      const { app } = harness();
      const labels: Record<string, string> = {};
      for (let i = 0; i < 40_000; i++) labels[`l${i}`] = 'x';
      const pod = structuredClone(basic.pod) as { metadata: { labels: Record<string, string> } };
      pod.metadata.labels = { ...pod.metadata.labels, ...labels };
      const res = await app.inject({ method: 'POST', url: '/mutate', payload: reviewFor(pod) });
      expect(res.json<{ response: { allowed: boolean; patch?: string } }>().response).toMatchObject({
        allowed: true,
        patch: expect.any(String) as unknown,
      });
    });
  });

  it('a dependency that throws is a 500 with a message, logged and counted as an error', async () => {
    const { app, logs, metrics } = harness({
      config: () => {
        throw new Error('config store exploded');
      },
      selectRuntimes: (pod) => runtimesFromAnnotations(pod),
    });
    const res = await app.inject({ method: 'POST', url: '/mutate', payload: reviewFor(basic.pod) });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ message: 'internal error: config store exploded', code: 'SI_INTERNAL' });
    expect(logs[0]).toMatchObject({ level: 'error', message: 'admission failed' });
    expect(await metricValue(metrics, 'sandbox_injector_admissions_total', { outcome: 'error' })).toBe(1);
  });

  it('an async runtime lookup that rejects is a 500', async () => {
    const { app } = harness({
      config: () => new InjectionConfigStore().snapshot(),
      selectRuntimes: () => Promise.reject(new Error('owner lookup failed')),
    });
    const res = await app.inject({ method: 'POST', url: '/mutate', payload: reviewFor(basic.pod) });
    expect(res.statusCode).toBe(500);
    expect(res.json<{ message: string }>().message).toContain('owner lookup failed');
  });

  const throwing: ReviewDeps = {
    config: () => {
      throw new Error('config store exploded');
    },
    selectRuntimes: (pod) => runtimesFromAnnotations(pod),
  };
  it.each([
    ['a body that is not JSON (the error handler)', undefined, undefined, '{"apiVersion": ', 400, 'bad_request'],
    ['a review without request (the handler)', undefined, undefined, { kind: 'AdmissionReview' }, 400, 'bad_request'],
    ['a failure of ours (the handler)', throwing, undefined, reviewFor(basic.pod), 500, 'error'],
    [
      'a body over the byte budget (the transport guard)',
      undefined,
      { maxInflightBytes: 64 },
      reviewFor(basic.pod),
      503,
      'busy',
    ],
  ] as const)(
    '%s: counted once, a busy 503 as a refusal only',
    async (_name, review, limits, payload, status, counted) => {
      const { app, metrics } = harness(review, limits);
      const res = await app.inject({ method: 'POST', url: '/mutate', headers: json, payload });
      expect(res.statusCode).toBe(status);
      const admissions = async (outcome: string): Promise<number> =>
        metricValue(metrics, 'sandbox_injector_admissions_total', { outcome });
      expect([await admissions('bad_request'), await admissions('error')]).toEqual([
        counted === 'bad_request' ? 1 : 0,
        counted === 'error' ? 1 : 0,
      ]);
      expect(await metricValue(metrics, 'sandbox_injector_transport_refusals_total', { reason: 'busy' })).toBe(
        counted === 'busy' ? 1 : 0,
      );
    },
  );
});

describe('unknown routes and methods', () => {
  it('an unknown path is 404 JSON, logged as a refusal', async () => {
    const { app, logs } = harness();
    const res = await app.inject({ method: 'GET', url: '/nope?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ message: 'no route GET /nope', code: 'SI_ROUTE_NOT_FOUND' });
    expect(logs).toEqual([
      {
        level: 'warn',
        message: 'request refused',
        fields: { path: '/nope', status: 404, code: 'SI_ROUTE_NOT_FOUND', message: 'no route GET /nope' },
      },
    ]);
  });

  it.each([
    ['GET', '/mutate', 'POST'],
    ['PUT', '/mutate', 'POST'],
    ['POST', '/healthz', 'GET, HEAD'],
    ['DELETE', '/readyz', 'GET, HEAD'],
  ])('%s %s is 405 JSON with Allow: %s, logged as a refusal', async (method, url, allow) => {
    const { app, logs } = harness();
    const res = await app.inject({ method: method as 'GET', url });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe(allow);
    expect(res.json<{ message: string }>().message).toContain(url);
    expect(logs).toMatchObject([
      { level: 'warn', message: 'request refused', fields: { path: url, status: 405, code: 'SI_METHOD_NOT_ALLOWED' } },
    ]);
  });
});
