/**
 * The controller against loopback envd doubles (test/support/envd-double.ts, which follow envd's published
 * file API; they are not the real envd), with an in-memory cache of Sandboxes and pods and a clock the test
 * drives. Addresses in 127.0.0.0/8 stand for pod IPs.
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeliveryPod, DeliverySandbox } from '../../../src/deliver/controller/claim.js';
import { Controller, type SandboxCache } from '../../../src/deliver/controller/controller.js';
import { envdFiles } from '../../../src/deliver/envd/envd-files.js';
import type { DeliveryOutcome } from '../../../src/deliver/controller/outcome.js';
import type { RecycledPodMode } from '../../../src/deliver/controller/recycle.js';
import { renderEnvFile } from '../../../src/envfile/render-env-file.js';
import { startEnvdDouble, type EnvdDouble } from '../../support/envd-double.js';
import { ManualClock } from '../../support/manual-clock.js';
import { waitUntil } from '../../support/wait-until.js';

const KEY = 'team/sbx';
const STATUS = 'agents.kruise.io/runtime-injection-status';
const REQUEST = 'agents.kruise.io/init-runtime-request';

interface World {
  sandbox: DeliverySandbox | undefined;
  pod: DeliveryPod | undefined;
}

function sandbox(annotations: Record<string, string>, extra: Partial<DeliverySandbox> = {}): DeliverySandbox {
  return { metadata: { name: 'sbx', namespace: 'team', uid: 'su', annotations }, ...extra };
}

function claimAnnotations(port: number, vars: Record<string, string>, token = 'tok'): Record<string, string> {
  return {
    [REQUEST]: JSON.stringify({ envVars: vars, accessToken: token }),
    'agents.kruise.io/runtime-url': `http://127.0.0.1:${port}`,
    'agents.kruise.io/claim-timestamp': new Date(999_000).toISOString(),
  };
}

/**
 * `ip` null: a pod that does not run yet, so has no IP. `main`: the instance of its wrapped container that
 * runs, as the kubelet reports it (a restart gives another).
 */
function pod(uid = 'pod-1', ip: string | null = '127.0.0.1', main = 'containerd://main-1'): DeliveryPod {
  const running = { name: 'main', containerID: main, state: { running: { startedAt: '2026-12-04T00:00:00Z' } } };
  return {
    metadata: { uid, annotations: { [STATUS]: JSON.stringify({ wrapped: ['main'] }) } },
    spec: { containers: [] },
    status: ip === null ? { phase: 'Pending' } : { phase: 'Running', podIP: ip, containerStatuses: [running] },
  };
}

/**
 * The Sandbox as upstream's controller keeps it, its status.podInfo.podUID naming its current pod, unless the
 * test gives it a status of its own.
 */
function synced(box: DeliverySandbox | undefined, current: DeliveryPod | undefined): DeliverySandbox | undefined {
  if (box === undefined || box.status !== undefined || current === undefined) return box;
  return { ...box, status: { podInfo: { podUID: current.metadata.uid } } };
}

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function envd(options: { token?: string; host?: string; port?: number } = { token: 'tok' }) {
  const dir = mkdtempSync(path.join(tmpdir(), 'si-deliver-'));
  const double = await startEnvdDouble({ root: dir, ...options });
  cleanup.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => double.close(),
  );
  return { dir, double };
}

interface TestTerm {
  signal: AbortSignal;
  fresh: () => boolean;
  end: () => void;
  freshness: { value: boolean };
}

function term(): TestTerm {
  const controller = new AbortController();
  const freshness = { value: true };
  return { signal: controller.signal, fresh: () => freshness.value, end: () => controller.abort(), freshness };
}

function harness(
  state: { current: World },
  options: {
    timeoutMs?: number;
    runtimePort?: number;
    cache?: SandboxCache;
    concurrency?: number;
    recycledPods?: RecycledPodMode;
  } = {},
) {
  const clock = new ManualClock();
  const outcomes: DeliveryOutcome[] = [];
  const cache: SandboxCache = options.cache ?? {
    get: (key) => (key === KEY ? synced(state.current.sandbox, state.current.pod) : undefined),
    keys: () => [KEY],
    podsOf: () => (state.current.pod === undefined ? [] : [state.current.pod]),
  };
  let nonce = 0;
  const controller = new Controller({
    cache,
    envd: envdFiles({ timeoutMs: options.timeoutMs ?? 2000, maxBodyBytes: 4096, user: 'root' }),
    settings: {
      envDir: '/var/sandbox',
      runtimePort: options.runtimePort ?? 49983,
      trustRuntimeUrl: false,
      requireTls: false,
      allowHostNetwork: false,
      recycledPods: options.recycledPods ?? 'restart',
      concurrency: options.concurrency ?? 4,
      backoff: { minMs: 100, maxMs: 1000 },
    },
    tls: () => ({ kind: 'none' }),
    clock,
    random: () => 1,
    report: (o) => outcomes.push(o),
    onBug: (_key, error) => {
      throw error;
    },
    nonce: () => (nonce += 1).toString(16).padStart(16, '0'),
  });
  return { clock, outcomes, controller };
}

/** Resolves once the controller has nothing queued or running; a deadline of its own. */
async function settled(controller: Controller): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await waitUntil(() => !controller.busy(), { what: 'the controller to settle', timeoutMs: 10_000, intervalMs: 5 });
}

const ops = (double: EnvdDouble) => double.requests.map((r) => `${r.operation} ${r.path ?? ''} ${r.status}`);
const writes = (double: EnvdDouble) => double.requests.filter((r) => r.operation !== 'get' && r.operation !== 'list');

describe('Controller: a claim', () => {
  it('lists the folder, uploads both files by temporary names in one request and moves each, then sends nothing; a new term reads .env_ready and writes nothing', async () => {
    const { dir, double } = await envd();
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'one', B: "it's" })), pod: pod() } };
    const { controller, outcomes } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    // .env_ready not listed: no GET, and no wake without a FIFO.
    expect(ops(double)).toEqual([
      'list /var/sandbox 200',
      'upload /var/sandbox/.env.sh.0000000000000001.tmp /var/sandbox/.env_ready.0000000000000001.tmp 200',
      'move /var/sandbox/env.sh 200',
      'move /var/sandbox/.env_ready 200',
    ]);
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toBe(renderEnvFile({ A: 'one', B: "it's" }));
    expect(readdirSync(dir).sort()).toEqual(['.env_ready', 'env.sh']);
    expect(outcomes).toEqual([
      expect.objectContaining({
        kind: 'delivered',
        key: KEY,
        podUid: 'pod-1',
        delivery: 'claim',
        variables: 2,
        requests: 4,
        claimToReadyMs: 1000,
      }),
    ]);

    controller.enqueue(KEY);
    await settled(controller);
    expect(double.requests).toHaveLength(4);

    controller.setTerm(term());
    await settled(controller);
    expect(ops(double).slice(4)).toEqual(['list /var/sandbox 200', 'get /var/sandbox/.env_ready 200']);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'unchanged', requests: 2 });
  });

  it('forgets a deleted Sandbox: one made again under its name is delivered again, token included', async () => {
    const { dir, double } = await envd();
    const claimed = sandbox(claimAnnotations(double.port, { A: 'one' }));
    const state: { current: World } = { current: { sandbox: claimed, pod: pod() } };
    const { controller, outcomes } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered', delivery: 'claim' });

    state.current = { sandbox: undefined, pod: undefined };
    controller.enqueue(KEY);
    await settled(controller);
    // Made again, with the same claim, into a pod whose folder is empty: only a forgotten delivery looks again.
    for (const name of readdirSync(dir)) rmSync(path.join(dir, name));
    const sent = double.requests.length;
    state.current = { sandbox: claimed, pod: pod() };
    controller.enqueue(KEY);
    await settled(controller);
    expect(ops(double).slice(sent, sent + 2)).toEqual([
      'list /var/sandbox 200',
      'upload /var/sandbox/.env.sh.0000000000000002.tmp /var/sandbox/.env_ready.0000000000000002.tmp 200',
    ]);
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toBe(renderEnvFile({ A: 'one' }));
  });

  it('wakes the wrappers through their FIFO once .env_ready is in place, and never writes a wake anywhere else', async () => {
    const { dir, double } = await envd();
    const fifo = path.join(dir, '.env_wake');
    execFileSync('mkfifo', [fifo]);
    // Held open read-write, as a waiting wrapper holds it: the writer's open does not wait.
    const reader = openSync(fifo, 'r+');
    try {
      const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'one' })), pod: pod() } };
      const { controller, outcomes } = harness(state);
      controller.setTerm(term());
      await settled(controller);
      expect(ops(double)[0]).toBe('list /var/sandbox 200');
      expect(ops(double).slice(-2)).toEqual(['move /var/sandbox/.env_ready 200', 'upload /var/sandbox/.env_wake 200']);
      expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered', delivery: 'claim', requests: 5 });
      const byte = Buffer.alloc(4);
      expect(readSync(reader, byte, 0, 4, null)).toBe(1);
      expect(byte.subarray(0, 1).toString()).toBe('\n');
    } finally {
      closeSync(reader);
    }
  });

  it.each([
    ['a symlink', (target: string, victim: string) => symlinkSync(victim, target)],
    ['a regular file', (target: string) => writeFileSync(target, 'keep')],
  ])('sends no wake when .env_wake is %s', async (_what, make) => {
    const { dir, double } = await envd();
    const victim = path.join(dir, 'victim');
    writeFileSync(victim, 'untouched');
    make(path.join(dir, '.env_wake'), victim);
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'one' })), pod: pod() } };
    const { controller, outcomes } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    expect(ops(double).at(-1)).toBe('move /var/sandbox/.env_ready 200');
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered', requests: 4 });
    expect(readFileSync(victim, 'utf8')).toBe('untouched');
  });

  it('reads .env_ready only when listed: one gone by the read is delivered afresh, and a stale one is rewritten without a wake', async () => {
    const { dir, double } = await envd();
    // The listing names .env_ready and a FIFO that are not there: the GET finds nothing, so it is a first delivery.
    double.setBehaviour((request) =>
      request.url === '/filesystem.Filesystem/ListDir'
        ? {
            listing: [
              { name: '.env_ready', type: 'FILE_TYPE_FILE' },
              { name: 'app.log', type: 'FILE_TYPE_FILE' },
            ],
          }
        : 'normal',
    );
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'one' })), pod: pod() } };
    const { controller, outcomes } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    expect(ops(double)).toEqual([
      'list /var/sandbox 200',
      'get /var/sandbox/.env_ready 404',
      'upload /var/sandbox/.env.sh.0000000000000001.tmp /var/sandbox/.env_ready.0000000000000001.tmp 200',
      'move /var/sandbox/env.sh 200',
      'move /var/sandbox/.env_ready 200',
    ]);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered', delivery: 'claim', requests: 5 });

    // A .env_ready of another content, with a wrapper's FIFO beside it: rewritten, and no wake, since no
    // wrapper waits while .env_ready is there.
    double.setBehaviour(undefined);
    writeFileSync(path.join(dir, '.env_ready'), 'another content');
    execFileSync('mkfifo', [path.join(dir, '.env_wake')]);
    const sent = double.requests.length;
    controller.setTerm(term());
    await settled(controller);
    expect(ops(double).slice(sent)).toEqual([
      'list /var/sandbox 200',
      'get /var/sandbox/.env_ready 200',
      'upload /var/sandbox/.env.sh.0000000000000002.tmp /var/sandbox/.env_ready.0000000000000002.tmp 200',
      'move /var/sandbox/env.sh 200',
      'move /var/sandbox/.env_ready 200',
    ]);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered', delivery: 'change', requests: 5 });
  });

  it('replaces a symlink the app put at .env_ready or env.sh, never writing through it', async () => {
    const { dir, double } = await envd();
    const victim = path.join(dir, 'victim');
    writeFileSync(victim, 'untouched');
    symlinkSync(victim, path.join(dir, 'env.sh'));
    symlinkSync(victim, path.join(dir, '.env_ready'));
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'x' })), pod: pod() } };
    const { controller } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    expect(readFileSync(victim, 'utf8')).toBe('untouched');
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toBe(renderEnvFile({ A: 'x' }));
  });

  it('writes an empty env.sh and .env_ready for a Sandbox claimed without a request', async () => {
    const { dir, double } = await envd({});
    const annotations = { 'agents.kruise.io/runtime-url': `http://127.0.0.1:${double.port}` };
    const claimedBox = sandbox(annotations);
    claimedBox.metadata = { ...claimedBox.metadata, labels: { 'agents.kruise.io/sandbox-claimed': 'true' } };
    const { controller, outcomes } = harness({ current: { sandbox: claimedBox, pod: pod() } });
    controller.setTerm(term());
    await settled(controller);
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toBe(renderEnvFile([]));
    expect(existsSync(path.join(dir, '.env_ready'))).toBe(true);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'delivered', delivery: 'empty', variables: 0 })]);
  });

  it('rewrites a changed claim, reported as a change', async () => {
    const { dir, double } = await envd();
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'one' })), pod: pod() } };
    const { controller, outcomes } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    state.current = { ...state.current, sandbox: sandbox(claimAnnotations(double.port, { A: 'two' })) };
    controller.enqueue(KEY);
    await settled(controller);
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toBe(renderEnvFile({ A: 'two' }));
    expect(outcomes.map((o) => o.kind === 'delivered' && o.delivery)).toEqual(['claim', 'change']);
  });
});

describe('Controller: the right pod', () => {
  it('sends nothing while a resumed Sandbox still names its deleted pod, and delivers once it names the new one', async () => {
    // The deleted pod's IP now belongs to another pool's sandbox, whose envd has no token yet.
    const other = await envd({ host: '127.0.0.2' });
    const fresh = await envd({ host: '127.0.0.3', port: other.double.port, token: 'tok' });
    const annotations = claimAnnotations(other.double.port, { API_KEY: 'tenant-secret' });
    delete annotations['agents.kruise.io/runtime-url'];
    const stale = sandbox(annotations, { status: { podInfo: { podIP: '127.0.0.2', podUID: 'old-pod' } } });
    const state = { current: { sandbox: stale, pod: pod('new-pod', '127.0.0.3') } };
    // Both doubles listen on envd's port, each on its own address.
    const { controller, outcomes, clock } = harness(state, { runtimePort: other.double.port });
    controller.setTerm(term());
    await settled(controller);
    expect(outcomes).toEqual([]);
    // A resume passes through this case; only once it outlasts the grace does a Warning say so.
    clock.advance(5_000);
    await settled(controller);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'held', case: 'pod-gone', podUid: 'old-pod' })]);
    expect(other.double.requests).toEqual([]);
    expect(fresh.double.requests).toEqual([]);

    state.current = { sandbox: sandbox(annotations), pod: pod('new-pod', '127.0.0.3') };
    controller.enqueue(KEY);
    await settled(controller);
    expect(other.double.requests).toEqual([]);
    expect(readdirSync(other.dir)).toEqual([]);
    expect(readFileSync(path.join(fresh.dir, 'env.sh'), 'utf8')).toContain('tenant-secret');
    expect(outcomes.slice(1)).toEqual([expect.objectContaining({ kind: 'delivered', podUid: 'new-pod' })]);
  });

  it('a pod that becomes decided during the grace is delivered to at once, with no Warning', async () => {
    const { double } = await envd();
    const annotations = claimAnnotations(double.port, { A: 'one' });
    const state = {
      current: { sandbox: sandbox(annotations, { status: { podInfo: { podUID: 'old-pod' } } }), pod: pod() },
    };
    const { controller, outcomes } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    state.current = { sandbox: sandbox(annotations), pod: pod() };
    controller.enqueue(KEY);
    await settled(controller);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'delivered', podUid: 'pod-1' })]);
  });

  it('a change that leaves what is decided on alone during the grace waits the grace out', async () => {
    const { double } = await envd();
    const held = sandbox(claimAnnotations(double.port, { A: 'one' }), { status: { podInfo: { podUID: 'old-pod' } } });
    const state = { current: { sandbox: held, pod: pod() } };
    const { controller, outcomes, clock } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    // Upstream's controller writes the Sandbox again: another version, the same inputs.
    state.current = { ...state.current, sandbox: { ...held, metadata: { ...held.metadata, resourceVersion: '2' } } };
    controller.enqueue(KEY);
    await settled(controller);
    expect(outcomes).toEqual([]);
    expect(clock.pending()).toEqual([5_000]);
    clock.advance(5_000);
    await settled(controller);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'held', case: 'pod-gone', podUid: 'old-pod' })]);
    expect(double.requests).toEqual([]);
  });

  it('a second pod claiming the Sandbox: nothing to either, one Warning, until it is gone', async () => {
    const { double } = await envd();
    const stranger = await envd({ host: '127.0.0.5', token: undefined });
    const annotations = claimAnnotations(double.port, { API_KEY: 'tenant-secret' });
    delete annotations['agents.kruise.io/runtime-url'];
    const mine = pod('pod-1', '127.0.0.1');
    const theirs = pod('stranger-pod', '127.0.0.5');
    let pods = [mine, theirs];
    const box = sandbox(annotations, { status: { podInfo: { podUID: 'pod-1' } } });
    const { controller, outcomes } = harness(
      { current: { sandbox: undefined, pod: undefined } },
      {
        runtimePort: double.port,
        cache: { get: () => box, keys: () => [KEY], podsOf: () => pods },
      },
    );
    controller.setTerm(term());
    await settled(controller);
    controller.enqueue(KEY);
    await settled(controller);
    expect(double.requests).toEqual([]);
    expect(stranger.double.requests).toEqual([]);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'held', case: 'ambiguous', podUid: 'pod-1' })]);
    pods = [mine];
    controller.enqueue(KEY);
    await settled(controller);
    expect(stranger.double.requests).toEqual([]);
    expect(outcomes.slice(1)).toEqual([expect.objectContaining({ kind: 'delivered', podUid: 'pod-1' })]);
  });

  it('delivers again to a new pod of the same claim, reported as a resume', async () => {
    const { dir, double } = await envd();
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'one' })), pod: pod('pod-1') } };
    const { controller, outcomes } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    for (const name of readdirSync(dir)) rmSync(path.join(dir, name));
    state.current = { ...state.current, pod: pod('pod-2') };
    controller.enqueue(KEY);
    await settled(controller);
    expect(existsSync(path.join(dir, '.env_ready'))).toBe(true);
    expect(outcomes.map((o) => o.kind === 'delivered' && `${o.delivery} ${o.podUid}`)).toEqual([
      'claim pod-1',
      'resume pod-2',
    ]);
    expect(outcomes[1]).toMatchObject({ claimToReadyMs: undefined });
  });

  it('refuses a runtime URL that names another host, with its own Event reason, and sends nothing there', async () => {
    const elsewhere = await envd({ host: '127.0.0.4', token: 'tok' });
    const annotations = claimAnnotations(elsewhere.double.port, { A: 'x' });
    annotations['agents.kruise.io/runtime-url'] = elsewhere.double.url;
    const { controller, outcomes } = harness({
      current: { sandbox: sandbox(annotations), pod: pod('pod-1', '127.0.0.1') },
    });
    controller.setTerm(term());
    await settled(controller);
    controller.enqueue(KEY);
    await settled(controller);
    expect(elsewhere.double.requests).toEqual([]);
    expect(outcomes).toEqual([
      expect.objectContaining({ kind: 'failed', reason: 'refused', event: 'RuntimeUrlRefused', retrying: false }),
    ]);
  });
});

describe('Controller: the claim ends', () => {
  async function delivered() {
    const { dir, double } = await envd();
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'secret-a' })), pod: pod() } };
    const h = harness(state);
    h.controller.setTerm(term());
    await settled(h.controller);
    return { dir, double, state, ...h };
  }

  it('removes .env_ready, env.sh and temporary files, with the token the claim was delivered with', async () => {
    const { dir, double, state, controller, outcomes } = await delivered();
    writeFileSync(path.join(dir, '.env.sh.00000000000000aa.tmp'), 'left by an interrupted attempt');
    writeFileSync(path.join(dir, 'run_with_envs.sh'), '#!/bin/bash\n');
    // Recycle: the pod stays; the claim's annotations (its token among them) are gone.
    state.current = {
      ...state.current,
      sandbox: {
        metadata: {
          name: 'sbx',
          namespace: 'team',
          uid: 'su',
          labels: { 'agents.kruise.io/sandbox-claimed': 'false' },
          annotations: { 'agents.kruise.io/runtime-url': `http://127.0.0.1:${double.port}` },
        },
      },
    };
    const before = double.requests.length;
    controller.enqueue(KEY);
    await settled(controller);
    expect(readdirSync(dir).sort()).toEqual(['.env_recycled', 'run_with_envs.sh']);
    // The mark names the instance that served the claim: the next claim waits until it is not the one running.
    expect(readFileSync(path.join(dir, '.env_recycled'), 'utf8')).toContain('container main containerd://main-1\n');
    expect(ops(double).slice(before)).toEqual([
      'list /var/sandbox 200',
      'remove /var/sandbox/.env_ready 200',
      'remove /var/sandbox/env.sh 200',
      'remove /var/sandbox/.env.sh.00000000000000aa.tmp 200',
      'upload /var/sandbox/.env_recycled.0000000000000002.tmp 200',
      'move /var/sandbox/.env_recycled 200',
    ]);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered', delivery: 'cleared' });
    // A later look finds it clear and sends nothing.
    controller.enqueue(KEY);
    await settled(controller);
    expect(double.requests).toHaveLength(before + 6);
  });

  /** The claim of `delivered()` ended: the pod is cleared and marked; the next tenant claims the same pod. */
  async function recycledThenClaimed(h: Awaited<ReturnType<typeof delivered>>) {
    const { double, state, controller } = h;
    state.current = {
      ...state.current,
      sandbox: sandbox({ 'agents.kruise.io/runtime-url': `http://127.0.0.1:${double.port}` }),
    };
    controller.enqueue(KEY);
    await settled(controller);
    state.current = { ...state.current, sandbox: sandbox(claimAnnotations(double.port, { B: 'secret-b' })) };
    controller.enqueue(KEY);
    await settled(controller);
  }

  it("waits for a recycled pod's containers to restart, then delivers the next claim, mark removed first", async () => {
    const h = await delivered();
    const { dir, double, state, controller, outcomes } = h;
    await recycledThenClaimed(h);
    // The instance that served A's claim still runs: nothing of B's goes in, and no Warning yet.
    expect(existsSync(path.join(dir, 'env.sh'))).toBe(false);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered', delivery: 'cleared' });
    // The wrapper ended A's command; the kubelet restarted the container: another instance runs.
    state.current = { ...state.current, pod: pod('pod-1', '127.0.0.1', 'containerd://main-2') };
    const before = double.requests.length;
    controller.enqueue(KEY);
    await settled(controller);
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toContain('secret-b');
    expect(existsSync(path.join(dir, '.env_recycled'))).toBe(false);
    expect(ops(double).slice(before, before + 3)).toEqual([
      'list /var/sandbox 200',
      'get /var/sandbox/.env_recycled 200',
      'remove /var/sandbox/.env_recycled 200',
    ]);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered', delivery: 'claim' });
  });

  it("removes an ended claim's late .env_ready before the mark, so no wrapper starts on it", async () => {
    const h = await delivered();
    const { dir, double, state, controller } = h;
    await recycledThenClaimed(h);
    // A request of an old term landed after the clearing: the ended claim's .env_ready is back beside the mark.
    writeFileSync(path.join(dir, '.env_ready'), 'sha256:late\n');
    state.current = { ...state.current, pod: pod('pod-1', '127.0.0.1', 'containerd://main-2') };
    const before = double.requests.length;
    controller.enqueue(KEY);
    await settled(controller);
    expect(ops(double).slice(before, before + 4)).toEqual([
      'list /var/sandbox 200',
      'get /var/sandbox/.env_recycled 200',
      'remove /var/sandbox/.env_ready 200',
      'remove /var/sandbox/.env_recycled 200',
    ]);
    expect(readFileSync(path.join(dir, '.env_ready'), 'utf8')).toMatch(/^sha256:[0-9a-f]{64}\n$/);
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toContain('secret-b');
  });

  it('refuses a claim into a recycled pod whose containers have not restarted within the grace, and says why', async () => {
    const h = await delivered();
    const { dir, state, controller, clock, outcomes } = h;
    await recycledThenClaimed(h);
    clock.advance(30_000);
    await settled(controller);
    expect(outcomes.at(-1)).toMatchObject({
      kind: 'failed',
      reason: 'refused',
      event: 'EnvPodRecycled',
      code: 'SI_POD_RECYCLED',
      retrying: false,
    });
    expect(outcomes.at(-1)?.kind === 'failed' && outcomes.at(-1)).toMatchObject({
      message: expect.stringMatching(/have not restarted since.*recreate the pod/) as unknown,
    });
    expect(existsSync(path.join(dir, 'env.sh'))).toBe(false);
    // A restart, however late, is a change: the claim goes in then.
    state.current = { ...state.current, pod: pod('pod-1', '127.0.0.1', 'containerd://main-2') };
    controller.enqueue(KEY);
    await settled(controller);
    expect(readFileSync(path.join(dir, 'env.sh'), 'utf8')).toContain('secret-b');
  });

  it('refuses every claim into a recycled pod with --recycled-pods=recreate, restarted or not', async () => {
    const { dir, double } = await envd();
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { B: 'b' })), pod: pod() } };
    writeFileSync(path.join(dir, '.env_recycled'), 'container main containerd://main-0\n');
    const { controller, outcomes } = harness(state, { recycledPods: 'recreate' });
    controller.setTerm(term());
    await settled(controller);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'failed', event: 'EnvPodRecycled', retrying: false })]);
    expect(outcomes[0]?.kind === 'failed' && outcomes[0]).toMatchObject({
      message: expect.stringMatching(/--recycled-pods=recreate.*recreate the pod/) as unknown,
    });
    expect(existsSync(path.join(dir, 'env.sh'))).toBe(false);
  });

  it('delivers into a recycled pod at once with --recycled-pods=any, the mark removed so that no wrapper ends the new claim', async () => {
    const { dir, double } = await envd();
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'a' })), pod: pod() } };
    writeFileSync(path.join(dir, '.env_recycled'), 'container main containerd://main-1\n');
    const { controller, outcomes } = harness(state, { recycledPods: 'any' });
    controller.setTerm(term());
    await settled(controller);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'delivered', delivery: 'claim' })]);
    expect(existsSync(path.join(dir, '.env_recycled'))).toBe(false);
  });

  it("lists a recycled pod again in a later term with the last claim's token, which envd still holds", async () => {
    const { double, state, controller, outcomes } = await delivered();
    state.current = {
      ...state.current,
      sandbox: sandbox({ 'agents.kruise.io/runtime-url': `http://127.0.0.1:${double.port}` }),
    };
    controller.enqueue(KEY);
    await settled(controller);
    const before = double.requests.length;
    controller.setTerm(term());
    await settled(controller);
    expect(ops(double).slice(before)).toEqual(['list /var/sandbox 200']);
    expect(outcomes.filter((o) => o.kind === 'failed')).toEqual([]);
  });

  it("does not mark a Sandbox's next pod recycled: only the pod the claim was in served it", async () => {
    const { dir, double, state, controller } = await delivered();
    // Paused and resumed, then recycled: the Sandbox's pod is another, which never served a claim.
    const fresh = await envd({ host: '127.0.0.2' });
    state.current = {
      sandbox: sandbox({ 'agents.kruise.io/runtime-url': `http://127.0.0.2:${fresh.double.port}` }),
      pod: pod('pod-2', '127.0.0.2'),
    };
    controller.enqueue(KEY);
    await settled(controller);
    expect(readdirSync(fresh.dir)).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(['.env_ready', 'env.sh']);
    expect(ops(fresh.double)).toEqual(['list /var/sandbox 200']);
    expect(double.requests.length).toBeGreaterThan(0);
  });

  it('clears after a leader change: a replica that followed while the claim was on knows its token', async () => {
    const { dir, double, state, controller } = await delivered();
    // The other replica, following: it sees every change of the Sandbox but sends nothing.
    const follower = harness(state);
    follower.controller.enqueue(KEY);
    // The leader dies; the claim ends (recycle); the follower takes the Lease.
    await controller.stop();
    state.current = {
      ...state.current,
      sandbox: sandbox({ 'agents.kruise.io/runtime-url': `http://127.0.0.1:${double.port}` }),
    };
    follower.controller.enqueue(KEY);
    const before = double.requests.length;
    follower.controller.setTerm(term());
    await settled(follower.controller);
    expect(readdirSync(dir)).toEqual(['.env_recycled']);
    expect(double.requests.slice(before).every((r) => r.status === 200)).toBe(true);
    expect(follower.outcomes).toEqual([expect.objectContaining({ kind: 'delivered', delivery: 'cleared' })]);
  });

  it('says it could not clear when this process never saw the claim, and leaves the files to no one else', async () => {
    const { dir, double, state } = await delivered();
    state.current = {
      ...state.current,
      sandbox: sandbox({ 'agents.kruise.io/runtime-url': `http://127.0.0.1:${double.port}` }),
    };
    // A process that started after the claim ended.
    const late = harness(state);
    late.controller.setTerm(term());
    await settled(late.controller);
    expect(late.outcomes.at(-1)).toMatchObject({
      kind: 'failed',
      reason: 'unauthorized',
      event: 'EnvNotCleared',
      retrying: false,
    });
    expect(late.outcomes.at(-1)?.kind === 'failed' && late.outcomes.at(-1)).toMatchObject({
      message: expect.stringMatching(/never saw that claim/) as unknown,
    });
    expect(readdirSync(dir).sort()).toEqual(['.env_ready', 'env.sh']);
  });

  it('finds a never-claimed pool sandbox clear in one request, and reports nothing', async () => {
    const { double } = await envd({});
    const { controller, outcomes } = harness({
      current: { sandbox: sandbox({ 'agents.kruise.io/runtime-url': `http://127.0.0.1:${double.port}` }), pod: pod() },
    });
    controller.setTerm(term());
    await settled(controller);
    expect(ops(double)).toEqual(['list /var/sandbox 200']);
    expect(outcomes).toEqual([]);
  });
});

describe('Controller: the queue', () => {
  it("never holds a claim back behind a new term's sweep of a pool whose envds do not answer", async () => {
    const pool = await envd({});
    pool.double.setBehaviour(() => 'slow');
    const claimed = await envd();
    const poolKeys = ['pool/a', 'pool/b', 'pool/c', 'pool/d', 'pool/e', 'pool/f'];
    const sandboxes = new Map<string, DeliverySandbox>(
      poolKeys.map((key) => [key, sandbox({ 'agents.kruise.io/runtime-url': `http://127.0.0.1:${pool.double.port}` })]),
    );
    // The claimed Sandbox is listed last, so a queue in arrival order would run it after the whole pool.
    sandboxes.set(KEY, sandbox(claimAnnotations(claimed.double.port, { A: 'one' })));
    const cache: SandboxCache = {
      get: (key) => synced(sandboxes.get(key), pod()),
      keys: () => sandboxes.keys(),
      podsOf: () => [pod()],
    };
    const { controller, outcomes } = harness(
      { current: { sandbox: undefined, pod: undefined } },
      {
        cache,
        concurrency: 4,
        timeoutMs: 60_000,
      },
    );
    const sweep = term();
    controller.setTerm(sweep);
    await waitUntil(() => outcomes.map((o) => o.kind), {
      what: 'the claim to be delivered',
      timeoutMs: 10_000,
      intervalMs: 5,
      until: (kinds) => kinds.includes('delivered'),
    });
    // Half the slots hold the pool's stuck listings, the rest of the pool still waits; a free slot took the claim.
    expect(controller.figures().depth).toBe(poolKeys.length - 2);
    expect(readdirSync(claimed.dir).sort()).toEqual(['.env_ready', 'env.sh']);
    sweep.end();
    controller.setTerm(undefined);
    await settled(controller);
  });
});

describe('Controller: failures', () => {
  it('retries a 5xx with capped backoff, reports one streak, removes what a failed attempt uploaded, then delivers', async () => {
    const { dir, double } = await envd();
    let failMoves = 2;
    double.setBehaviour((request) =>
      request.url?.includes('/Move') === true && failMoves-- > 0 ? { status: 503 } : 'normal',
    );
    const { controller, outcomes, clock } = harness({
      current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'x' })), pod: pod() },
    });
    controller.setTerm(term());
    await settled(controller);
    expect(readdirSync(dir)).toEqual([]);
    const waits: number[] = [];
    while (clock.pending().length > 0) {
      waits.push(...clock.pending());
      clock.fire();
      await settled(controller);
    }
    expect(waits).toEqual([100, 200]);
    expect(outcomes.filter((o) => o.kind === 'failed').map((o) => o.kind === 'failed' && o.firstOfStreak)).toEqual([
      true,
      false,
    ]);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered' });
    expect(readdirSync(dir).sort()).toEqual(['.env_ready', 'env.sh']);
  });

  it('does not retry a 401 until the Sandbox changes', async () => {
    const { dir, double } = await envd({ token: 'right' });
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'x' }, 'wrong')), pod: pod() } };
    const { controller, outcomes, clock } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    controller.enqueue(KEY);
    await settled(controller);
    expect(clock.pending()).toEqual([]);
    expect(ops(double)).toEqual(['list /var/sandbox 401']);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'failed', reason: 'unauthorized', retrying: false })]);
    expect(readdirSync(dir)).toEqual([]);
    state.current = { ...state.current, sandbox: sandbox(claimAnnotations(double.port, { A: 'x' }, 'right')) };
    controller.enqueue(KEY);
    await settled(controller);
    expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered' });
  });

  it('a change with the same inputs waits out the backoff; new inputs run at once', async () => {
    const { double } = await envd();
    double.setBehaviour(() => ({ status: 503 }));
    const state = { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'x' })), pod: pod() } };
    const { controller } = harness(state);
    controller.setTerm(term());
    await settled(controller);
    expect(double.requests).toHaveLength(1);
    const unrelated = sandbox(claimAnnotations(double.port, { A: 'x' }));
    unrelated.metadata = { ...unrelated.metadata, resourceVersion: '2' };
    state.current = { ...state.current, sandbox: unrelated };
    controller.enqueue(KEY);
    await settled(controller);
    expect(double.requests).toHaveLength(1);
    state.current = { ...state.current, sandbox: sandbox(claimAnnotations(double.port, { A: 'y' })) };
    controller.enqueue(KEY);
    await settled(controller);
    expect(double.requests).toHaveLength(2);
  });

  it('reports a refused request once, and writes nothing', async () => {
    const { double } = await envd();
    const { controller, outcomes } = harness({
      current: { sandbox: sandbox(claimAnnotations(double.port, { 'NOT-A-NAME': 'v' })), pod: pod() },
    });
    controller.setTerm(term());
    await settled(controller);
    controller.enqueue(KEY);
    await settled(controller);
    expect(double.requests).toEqual([]);
    expect(outcomes).toEqual([
      expect.objectContaining({ kind: 'failed', reason: 'refused', event: 'EnvDeliveryFailed' }),
    ]);
  });
});

describe('Controller: leadership', () => {
  it('does nothing without a term', async () => {
    const { double } = await envd();
    const { controller } = harness({
      current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'x' })), pod: pod() },
    });
    controller.enqueue(KEY);
    await settled(controller);
    expect(double.requests).toEqual([]);
  });

  it('sends nothing while the term is not provably fresh', async () => {
    const { double } = await envd();
    const { controller, outcomes } = harness({
      current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'x' })), pod: pod() },
    });
    const stale = term();
    stale.freshness.value = false;
    controller.setTerm(stale);
    await settled(controller);
    expect(double.requests).toEqual([]);
    expect(outcomes).toEqual([]);
  });

  it("cuts the term's requests in flight when it ends, and records nothing of them", async () => {
    const { dir, double } = await envd();
    let holding = true;
    // Uploads hang; the listing (a Connect call, /filesystem.Filesystem/ListDir) goes through.
    double.setBehaviour((request) => (holding && request.url?.startsWith('/files?') === true ? 'slow' : 'normal'));
    const { controller, outcomes } = harness(
      { current: { sandbox: sandbox(claimAnnotations(double.port, { A: 'x' })), pod: pod() } },
      { timeoutMs: 60_000 },
    );
    const first = term();
    controller.setTerm(first);
    await waitUntil(() => double.requests.map((r) => r.operation), {
      what: 'a listing',
      timeoutMs: 10_000,
      intervalMs: 5,
      until: (operations) => operations.includes('list'),
    });
    first.end();
    controller.setTerm(undefined);
    await settled(controller);
    holding = false;
    expect(outcomes).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
    // A new term starts afresh: it looks, and delivers.
    controller.setTerm(term());
    await settled(controller);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'delivered' })]);
    expect(
      writes(double)
        .filter((r) => r.status === 200)
        .map((r) => r.operation),
    ).toEqual(['upload', 'move', 'move']);
  });
});
