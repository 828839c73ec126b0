/**
 * Every public conformance case, over a real HTTPS connection to POST /mutate: the response patch is
 * applied by the strict RFC 6902 applier and must give the expected pod.
 */
import { Agent } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectConformance,
  loadConformanceCases,
  OUR_CONFORMANCE_DIR,
  type ConformanceCase,
  reviewFor,
  type ReviewResponseLike,
} from '../support/conformance.js';
import { readinessProbeWarning } from '../../src/injection/auto-warnings.js';
import { postJson } from './support/https-client.js';
import { servingPki, temporaryDirectory } from './support/pki.js';
import { startTestServer, type TestServer } from './support/server.js';

let pki: Awaited<ReturnType<typeof servingPki>>;
let agent: Agent;
let cleanup: () => Promise<void>;
/** One server per set of flags, started with them as `serve` would be. */
const servers = new Map<string, Promise<TestServer>>();

function serverFor(flags: readonly string[] = []): Promise<TestServer> {
  const key = flags.join(' ');
  let server = servers.get(key);
  if (server === undefined) {
    server = startTestServer({ tls: pki, caFile: pki.caCertFile, flags: [...flags] });
    servers.set(key, server);
  }
  return server;
}

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('conformance');
  pki = await servingPki(dir);
  agent = new Agent({ keepAlive: true, maxSockets: 1 });
  cleanup = remove;
});

afterAll(async () => {
  agent.destroy();
  for (const server of servers.values()) await (await server).close();
  await cleanup();
});

interface ReviewBody {
  apiVersion: string;
  kind: string;
  response: ReviewResponseLike;
}

describe('conformance cases over HTTPS POST /mutate', () => {
  for (const testCase of loadConformanceCases()) it(testCase.file, () => postCase(testCase));
  it('logs one admission line per review, with what was decided', async () => {
    const server = await serverFor();
    const admissions = server.logs.filter((line) => line.message === 'admission');
    expect(admissions).toHaveLength(loadConformanceCases().filter((c) => c.flags === undefined).length);
    const first = admissions[0]?.fields;
    expect(first).toMatchObject({
      uid: 'uid-agent-runtime-basic',
      namespace: 'default',
      pod: 'sbx-',
      runtimes: ['agent-runtime'],
      decision: 'injected',
    });
    expect(first?.patchBytes).toBeGreaterThan(0);
    expect(typeof first?.durationMs).toBe('number');
  });
});

describe('our own conformance-style cases (test/fixtures/conformance-ours) over HTTPS POST /mutate', () => {
  for (const testCase of loadConformanceCases(OUR_CONFORMANCE_DIR)) it(testCase.file, () => postCase(testCase));

  it('logs each warning whole, beside the count', async () => {
    const server = await serverFor(['--warn-unwrapped']);
    const line = server.logs.find((l) => l.message === 'admission' && l.fields.pod === 'sbx-http-ready')?.fields;
    expect(line).toMatchObject({
      warnings: 1,
      warningMessages: [`pod default/sbx-http-ready: ${readinessProbeWarning('app', 'httpGet')}`],
    });
  });
});

async function postCase(testCase: ConformanceCase): Promise<void> {
  const server = await serverFor(testCase.flags);
  const data = testCase.configMap?.data as Record<string, string> | undefined;
  server.setConfig(data);
  const uid = `uid-${testCase.name}`;

  const result = await postJson(`${server.url}/mutate`, reviewFor(testCase.pod, uid), { ca: server.caPem, agent });

  expect(result.status).toBe(200);
  const review = result.json() as ReviewBody;
  expect(review.apiVersion).toBe('admission.k8s.io/v1');
  expect(review.kind).toBe('AdmissionReview');
  expectConformance(testCase, review.response);
}
