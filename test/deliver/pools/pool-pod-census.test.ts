/**
 * The census of pool pods (counts per state, kept one Sandbox at a time) and what the leader says about them:
 * one Warning per pod found missing or stale, named so that another replica's copy is refused.
 */
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ConfigSnapshot } from '../../../src/config/injection-config.js';
import type { DeliveryPod } from '../../../src/deliver/controller/claim.js';
import type { SandboxCache } from '../../../src/deliver/controller/controller.js';
import type { EventQueue } from '../../../src/deliver/controller/event-queue.js';
import { PoolPodCensus, type PoolPodEntry } from '../../../src/deliver/pools/pool-pod-census.js';
import { PoolPodReporter } from '../../../src/deliver/pools/pool-pod-reporter.js';
import type { PoolSandbox } from '../../../src/deliver/pools/pool-pods.js';
import { STATUS_ANNOTATION } from '../../../src/injection/index.js';
import { InjectionConfigStore } from '../../../src/config/injection-config.js';
import { AGENT_CONFIG } from '../../support/builders.js';
import { ManualClock } from '../../support/manual-clock.js';
import { unreachableKubeConfig } from '../../support/scripted-watch.js';

function world() {
  const store = new InjectionConfigStore();
  store.update({ 'agent-runtime': JSON.stringify(AGENT_CONFIG) });
  let config: ConfigSnapshot | undefined = store.snapshot();
  const sandboxes = new Map<string, PoolSandbox>();
  const pods = new Map<string, DeliveryPod>();
  const looked: string[] = [];
  const cache: SandboxCache = {
    get: (key) => {
      looked.push(key);
      return sandboxes.get(key);
    },
    keys: () => {
      looked.push('*');
      return sandboxes.keys();
    },
    podsOf: (sandbox) => {
      const pod = pods.get(`team/${sandbox.metadata?.name ?? ''}`);
      return pod === undefined ? [] : [pod];
    },
  };
  const census = new PoolPodCensus({ cache, config: () => config, settings: { allowHostNetwork: false } });
  const put = (name: string, pool: string | undefined, status: Record<string, unknown> | undefined) => {
    sandboxes.set(`team/${name}`, {
      metadata: {
        name,
        namespace: 'team',
        uid: `${name}-uid`,
        ownerReferences:
          pool === undefined
            ? []
            : [
                {
                  apiVersion: 'agents.kruise.io/v1alpha1',
                  kind: 'SandboxSet',
                  name: pool,
                  uid: pool,
                  controller: true,
                },
              ],
      },
      spec: { runtimes: [{ name: 'agent-runtime' }] },
      status: { podInfo: { podUID: `${name}-pod` } },
    });
    pods.set(`team/${name}`, {
      metadata: {
        name,
        namespace: 'team',
        uid: `${name}-pod`,
        resourceVersion: '1',
        ...(status === undefined ? {} : { annotations: { [STATUS_ANNOTATION]: JSON.stringify(status) } }),
        ownerReferences: [
          { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name, uid: `${name}-uid`, controller: true },
        ],
      },
      spec: { containers: [{ name: 'main' }] },
      status: { phase: 'Running' },
    });
    census.changed(`team/${name}`);
  };
  const first = store.snapshot();
  const revision = first.present ? first.revision(['agent-runtime']) : '';
  const fine = { injected: ['agent-runtime'], present: [], skipped: [], wrapped: [], revision };
  const stale = { ...fine, revision: 'sha256:0000000000000000' };
  return {
    census,
    put,
    fine,
    stale,
    looked,
    remove: (name: string) => {
      sandboxes.delete(`team/${name}`);
      census.changed(`team/${name}`);
    },
    setConfig: (data: Record<string, string> | undefined) => {
      const next = new InjectionConfigStore();
      next.update(data);
      config = next.snapshot();
      census.judgeAll();
    },
  };
}

describe('PoolPodCensus', () => {
  it('counts the judged pods of each state, and of each pool, one Sandbox at a time', () => {
    const w = world();
    w.put('a', 'pool-a', w.fine);
    w.put('b', 'pool-a', w.stale);
    w.put('c', undefined, undefined);
    expect(w.census.figures()).toEqual({ fine: 1, missing: 1, stale: 1 });
    expect(w.census.poolSize('team/pool-a')).toBe(2);
    w.put('b', 'pool-a', w.fine);
    w.remove('c');
    expect(w.census.figures()).toEqual({ fine: 2, missing: 0, stale: 0 });
  });

  it('judges only the Sandbox that changed: a watch event costs one judgement, never a pass over all', () => {
    const w = world();
    for (const name of ['a', 'b', 'c']) w.put(name, 'pool-a', w.fine);
    w.looked.length = 0;
    w.put('b', 'pool-a', w.stale);
    expect(w.looked).toEqual(['team/b']);
  });

  it('judges every Sandbox again when the config changes', () => {
    const w = world();
    w.put('a', 'pool-a', w.fine);
    w.setConfig({ 'agent-runtime': JSON.stringify({ ...AGENT_CONFIG, volume: [] }) });
    expect(w.census.figures()).toEqual({ fine: 0, missing: 0, stale: 1 });
    w.setConfig(undefined);
    expect(w.census.figures()).toEqual({ fine: 1, missing: 0, stale: 0 });
  });

  it('tells its listeners each change, with the entry before and after, and nothing when nothing changed', () => {
    const w = world();
    const heard: [string, string | undefined, string | undefined][] = [];
    w.census.listen((key, before, after) => heard.push([key, before?.state, after?.state]));
    w.put('a', 'pool-a', w.stale);
    w.put('a', 'pool-a', w.stale);
    w.put('a', 'pool-a', w.fine);
    w.remove('a');
    expect(heard).toEqual([
      ['team/a', undefined, 'stale'],
      ['team/a', 'stale', 'fine'],
      ['team/a', 'fine', undefined],
    ]);
  });
});

describe('PoolPodReporter', () => {
  function reporter() {
    const sent: CoreV1Event[] = [];
    const failures: unknown[] = [];
    const core = unreachableKubeConfig().makeApiClient(CoreV1Api);
    let refuse = false;
    core.createNamespacedEvent = (request: { body: CoreV1Event }) => {
      if (refuse) return Promise.reject(Object.assign(new Error('AlreadyExists'), { code: 409 }));
      sent.push(request.body);
      return Promise.resolve(request.body);
    };
    const events: EventQueue = {
      push: (send) => void send().catch((error: unknown) => failures.push(error)),
      drained: () => Promise.resolve(),
    };
    const r = new PoolPodReporter({
      logger: pino({ level: 'silent' }),
      metrics: { replaced: () => undefined },
      core,
      identity: 'me',
      events,
      clock: new ManualClock(),
    });
    return { r, sent, failures, refuse: () => (refuse = true) };
  }

  const entry = (state: 'fine' | 'missing' | 'stale', podUid = 'pod-1'): PoolPodEntry => ({
    kind: 'judged',
    key: 'team/sbx',
    state,
    reason: `why it is ${state}`,
    sandboxUid: 'sbx-uid',
    podUid,
    podName: 'sbx',
    podVersion: '1',
    ready: true,
    pool: { key: 'team/pool-a', uid: 'pool-uid' },
    runtimes: ['agent-runtime'],
    expected: undefined,
  });

  it('says nothing while it does not lead; as leader, one Warning per pod and state, on the Sandbox', async () => {
    const { r, sent } = reporter();
    r.judged('team/sbx', entry('missing'));
    expect(sent).toEqual([]);
    r.setLeading(true, [entry('missing')]);
    r.judged('team/sbx', entry('missing'));
    await Promise.resolve();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      metadata: { name: 'pool-pod-missing-pod-1', namespace: 'team' },
      involvedObject: { kind: 'Sandbox', name: 'sbx', namespace: 'team', uid: 'sbx-uid' },
      reason: 'PoolPodMissing',
      type: 'Warning',
      message:
        'pod pod-1 is missing its runtimes: why it is missing; a claim of it would not get what the injection config says',
    });
    r.judged('team/sbx', entry('stale', 'pod-2'));
    await Promise.resolve();
    expect(sent.map((e) => e.reason)).toEqual(['PoolPodMissing', 'PoolPodStale']);
  });

  it("takes another replica's copy of the same Event (409) as said", async () => {
    const { r, sent, failures, refuse } = reporter();
    refuse();
    r.setLeading(true, [entry('stale')]);
    await Promise.resolve();
    await Promise.resolve();
    expect(sent).toEqual([]);
    expect(failures).toEqual([]);
  });
});
