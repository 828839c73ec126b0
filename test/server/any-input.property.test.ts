/**
 * Whatever a client sends to POST /mutate, the answer is a 2xx or 4xx with a JSON message, never a 5xx, and a
 * 200 is always a well-formed review answer for the request's uid.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/server/app.js';
import { createMetrics } from '../../src/server/metrics.js';
import { httpsServerOptions, loadTlsMaterial, type TlsMaterial } from '../../src/server/tls/material.js';
import { InjectionConfigStore } from '../../src/config/injection-config.js';
import { runtimesFromAnnotations } from '../../src/sandbox/runtime-selection.js';
import { podArbitrary } from '../property/arbitraries.js';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { propertyRuns, propertyTimeout } from '../support/property-runs.js';
import { servingPki, temporaryDirectory } from './support/pki.js';
import { recordingLogger } from './support/server.js';

let material: TlsMaterial;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('any-input');
  material = await loadTlsMaterial(await servingPki(dir));
  removeDir = remove;
});
afterAll(() => removeDir());

function app(): ReturnType<typeof buildApp> {
  const store = new InjectionConfigStore();
  store.update(loadConformanceCases()[0]?.configMap?.data as Record<string, string>);
  return buildApp({
    https: httpsServerOptions(material),
    review: { config: () => store.snapshot(), selectRuntimes: (pod) => runtimesFromAnnotations(pod) },
    ready: () => true,
    logger: recordingLogger(),
    metrics: createMetrics({ defaultMetrics: false, configLoadedAt: () => store.loadedAt, now: Date.now }),
  });
}

const body = fc.oneof(
  fc.string(),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  podArbitrary.map((pod) => JSON.stringify(reviewFor(pod))),
  fc.tuple(podArbitrary, fc.nat()).map(([pod, cut]) => {
    const text = JSON.stringify(reviewFor(pod));
    return text.slice(0, cut % text.length);
  }),
);
const RUNS = propertyRuns(1000);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  '',
);

describe('POST /mutate with any input', () => {
  it(
    `answers ${RUNS} arbitrary bodies and content types without a 5xx`,
    async () => {
      const server = app();
      try {
        await fc.assert(
          fc.asyncProperty(body, contentType, async (payload, type) => {
            const headers = type === '' ? {} : { 'content-type': type };
            const response = await server.inject({ method: 'POST', url: '/mutate', payload, headers });
            expect(response.statusCode).toBeLessThan(500);
            const answer = response.json<Record<string, unknown>>();
            if (response.statusCode === 200) {
              const sent = JSON.parse(payload) as { request: { uid: string } };
              expect(answer).toMatchObject({ kind: 'AdmissionReview', response: { uid: sent.request.uid } });
            } else {
              expect(typeof answer.message).toBe('string');
            }
          }),
          { numRuns: RUNS },
        );
      } finally {
        await server.close();
      }
    },
    propertyTimeout(RUNS),
  );
});
