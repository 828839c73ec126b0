/**
 * The reconciler against the loopback envd double (test/support/envd-double.ts, which follows envd's published
 * file API; it is not the real envd), with an in-memory cache and a clock the test drives.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeliverySandbox } from '../../src/deliver/claim.js';
import { Deliverer, type DeliveryOutcome, type SandboxCache } from '../../src/deliver/deliverer.js';
import { envdFiles } from '../../src/deliver/envd-files.js';
import { renderEnvFile } from '../../src/envfile/render-env-file.js';
import type { Pod } from '../../src/injection/index.js';
import { startEnvdDouble, type EnvdDouble } from '../support/envd-double.js';
import { FakeClock } from './fake-clock.js';

const KEY = 'team/sbx';
const STATUS = 'agents.kruise.io/runtime-injection-status';

interface World {
  sandbox: DeliverySandbox;
  pod: Pod;
}

function world(url: string, vars: Record<string, string>, token = 'tok'): World {
  return {
    sandbox: {
      metadata: {
        name: 'sbx',
        namespace: 'team',
        uid: 'su',
        annotations: {
          'agents.kruise.io/init-runtime-request': JSON.stringify({ envVars: vars, accessToken: token }),
          'agents.kruise.io/runtime-url': url,
          'agents.kruise.io/claim-timestamp': new Date(999_000).toISOString(),
        },
      },
    },
    pod: {
      metadata: { uid: 'pod-1', annotations: { [STATUS]: JSON.stringify({ wrapped: ['main'] }) } },
      spec: { containers: [] },
    },
  };
}

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0)) await step();
});

async function setup(token: string | undefined = 'tok') {
  const dir = mkdtempSync(path.join(tmpdir(), 'si-deliver-'));
  const double = await startEnvdDouble({ root: dir, token });
  cleanup.push(
    () => double.close(),
    () => rmSync(dir, { recursive: true, force: true }),
  );
  return { dir, double };
}

function deliverer(state: { current: World }, clock: FakeClock, outcomes: DeliveryOutcome[], timeoutMs = 2000) {
  const cache: SandboxCache = {
    get: (key) => (key === KEY ? state.current.sandbox : undefined),
    keys: () => [KEY],
    podOf: () => state.current.pod,
  };
  const d = new Deliverer({
    cache,
    envd: envdFiles({ timeoutMs, maxBodyBytes: 4096 }),
    settings: {
      envDir: '/var/sandbox',
      user: 'root',
      runtimePort: 49983,
      concurrency: 4,
      backoff: { minMs: 100, maxMs: 1000 },
    },
    clock: { now: () => clock.now, setTimer: clock.setTimer },
    random: () => 1,
    report: (o) => outcomes.push(o),
    onBug: (_key, error) => {
      throw error;
    },
  });
  return d;
}

const ops = (double: EnvdDouble) => double.requests.map((r) => `${r.operation} ${r.path ?? ''} ${r.status}`);

describe('Deliverer', () => {
  it('delivers in 3 requests, then makes none; a new process looks once and writes nothing', async () => {
    const { dir, double } = await setup();
    const state = { current: world(double.url, { A: 'one', B: "it's" }) };
    const clock = new FakeClock();
    const outcomes: DeliveryOutcome[] = [];
    const d = deliverer(state, clock, outcomes);
    d.setLeading(true);
    await d.idle();
    expect(ops(double)).toEqual([
      'get /var/sandbox/.env_ready 404',
      'upload /var/sandbox/env.sh 200',
      'upload /var/sandbox/.env_ready 200',
    ]);
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toBe(renderEnvFile({ A: 'one', B: "it's" }));
    expect(outcomes).toEqual([
      { kind: 'delivered', key: KEY, podUid: 'pod-1', variables: 2, requests: 3, claimToReadyMs: 1000, rewrite: false },
    ]);

    d.enqueue(KEY);
    await d.idle();
    expect(double.requests).toHaveLength(3);

    const restarted = deliverer(state, clock, outcomes);
    restarted.setLeading(true);
    await restarted.idle();
    expect(ops(double).slice(3)).toEqual(['get /var/sandbox/.env_ready 200']);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'unchanged', requests: 1 });
  });

  it('retries a 5xx with capped, jittered backoff, reports one streak, then delivers', async () => {
    const { dir, double } = await setup();
    let failuresLeft = 3;
    double.setBehaviour(() => (failuresLeft-- > 0 ? { status: 503 } : 'normal'));
    const clock = new FakeClock();
    const outcomes: DeliveryOutcome[] = [];
    const d = deliverer({ current: world(double.url, { A: 'x' }) }, clock, outcomes);
    d.setLeading(true);
    await d.idle();
    const waits: number[] = [];
    for (let i = 0; i < 3 && clock.pending().length > 0; i += 1) {
      waits.push(...clock.pending());
      clock.fire();
      await d.idle();
    }
    expect(waits).toEqual([100, 200, 400]);
    expect(outcomes.filter((o) => o.kind === 'failed').map((o) => o.kind === 'failed' && o.firstOfStreak)).toEqual([
      true,
      false,
      false,
    ]);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered' });
    expect(readdirSync(dir).sort()).toEqual(['.env_ready', 'env.sh']);
  });

  it('does not retry a 401 until the Sandbox changes', async () => {
    const { dir, double } = await setup('right');
    const state = { current: world(double.url, { A: 'x' }, 'wrong') };
    const clock = new FakeClock();
    const outcomes: DeliveryOutcome[] = [];
    const d = deliverer(state, clock, outcomes);
    d.setLeading(true);
    await d.idle();
    d.enqueue(KEY);
    await d.idle();
    expect(clock.pending()).toEqual([]);
    expect(ops(double)).toEqual(['get /var/sandbox/.env_ready 401']);
    expect(outcomes).toEqual([
      expect.objectContaining({ kind: 'failed', reason: 'unauthorized', retryInMs: undefined }),
    ]);
    expect(readdirSync(dir)).toEqual([]);

    state.current = world(double.url, { A: 'x' }, 'right');
    d.enqueue(KEY);
    await d.idle();
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered' });
  });

  it('reports a refused request once, and writes nothing', async () => {
    const { double } = await setup();
    const clock = new FakeClock();
    const outcomes: DeliveryOutcome[] = [];
    const d = deliverer({ current: world(double.url, { 'NOT-A-NAME': 'v' }) }, clock, outcomes);
    d.setLeading(true);
    await d.idle();
    d.enqueue(KEY);
    await d.idle();
    expect(double.requests).toEqual([]);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'failed', reason: 'refused' })]);
  });

  it('does nothing while following the Lease', async () => {
    const { double } = await setup();
    const d = deliverer({ current: world(double.url, { A: 'x' }) }, new FakeClock(), []);
    d.enqueue(KEY);
    await d.idle();
    expect(double.requests).toEqual([]);
  });
});

describe('the envd double truncates and writes in place, as envd does', () => {
  it('lets a reader racing an upload see half a file (which is why rewrites go through Move)', async () => {
    const { dir, double } = await setup();
    const client = envdFiles({ timeoutMs: 2000, maxBodyBytes: 4096 });
    const endpoint = { runtimeUrl: double.url, accessToken: 'tok', user: 'root' };
    const content = 'x'.repeat(200_000);
    await client.run(endpoint, { op: 'upload', path: '/var/sandbox/env.sh', body: 'old' });
    const seen = new Set<number>();
    let reading = true;
    const reader = (async () => {
      while (reading) {
        try {
          seen.add(readFileSync(path.join(dir, 'env.sh')).length);
        } catch {
          seen.add(-1);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await client.run(endpoint, { op: 'upload', path: '/var/sandbox/env.sh', body: content });
    reading = false;
    await reader;
    expect([...seen].some((size) => size !== 3 && size !== content.length)).toBe(true);
  });
});
