/**
 * The state of an unclaimed Sandbox's pod: missing, stale, fine, a pod whose runtimes the Sandbox controller
 * injected itself, and a claimed Sandbox's pod (never judged). The pods are admitted by the webhook's own
 * injection with the same config snapshot deliver-env judges them against, so the two sides agree by test.
 */
import { describe, expect, it } from 'vitest';
import type { ConfigSnapshot } from '../../../src/config/injection-config.js';
import type { DeliveryPod } from '../../../src/deliver/controller/claim.js';
import { judgePoolPod, poolOf, type PoolSandbox } from '../../../src/deliver/pools/pool-pods.js';
import { injectRuntimes, STATUS_ANNOTATION, type Pod } from '../../../src/injection/index.js';
import { InjectionConfigStore } from '../../../src/config/injection-config.js';
import { AGENT_CONFIG, CSI_CONFIG } from '../../support/builders.js';

const POLICY = 'agents.kruise.io/env-vars-injection-policy';
const SETTINGS = { allowHostNetwork: false };
const KEYS = { 'agent-runtime': JSON.stringify(AGENT_CONFIG), csi: JSON.stringify(CSI_CONFIG) };

function configOf(data: Record<string, string> | undefined): ConfigSnapshot {
  const store = new InjectionConfigStore('sandbox-system/sandbox-injection-config');
  store.update(data);
  return store.snapshot();
}

const POOL_OWNER = {
  apiVersion: 'agents.kruise.io/v1alpha1',
  kind: 'SandboxSet',
  name: 'pool-a',
  uid: 'pool-uid',
  controller: true,
};

function sandbox(
  runtimes: string[],
  extra: { policy?: string; claimed?: boolean; owners?: unknown[]; podUid?: string } = {},
): PoolSandbox {
  return {
    metadata: {
      name: 'sbx',
      namespace: 'team',
      uid: 'sbx-uid',
      ...(extra.claimed === true ? { labels: { 'agents.kruise.io/sandbox-claimed': 'true' } } : {}),
      ...(extra.policy === undefined ? {} : { annotations: { [POLICY]: extra.policy } }),
      ownerReferences: extra.owners ?? [POOL_OWNER],
    },
    spec: { runtimes: runtimes.map((name) => ({ name })) },
    status: { podInfo: { podUID: extra.podUid ?? 'pod-1' } },
  };
}

/** The pod as the Sandbox controller creates it: the template, owned by the Sandbox, running and Ready. */
function created(containers: Pod['spec']['containers'] = [{ name: 'main', image: 'app:1', command: ['run'] }]) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'sbx',
      namespace: 'team',
      uid: 'pod-1',
      resourceVersion: '7',
      ownerReferences: [
        { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: 'sbx', uid: 'sbx-uid', controller: true },
      ],
    },
    spec: { containers },
    status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
  } satisfies Pod as DeliveryPod;
}

/** The pod as the webhook admits it under `config`: the same injection, the same revision, as the server. */
function admitted(pod: DeliveryPod, runtimes: string[], config: ConfigSnapshot, policy: 'None' | 'Auto' = 'None') {
  if (!config.present) throw new Error('no config');
  const result = injectRuntimes(pod, {
    runtimes: runtimes.map((name) => ({ name, config: config.valid.get(name) ?? {} })),
    policy,
    allConfigs: config.valid,
    revision: config.revision,
  });
  return result.pod;
}

const state = (judgement: ReturnType<typeof judgePoolPod>) =>
  judgement.kind === 'judged' ? judgement.state : `not judged: ${judgement.why}`;

describe('judgePoolPod', () => {
  const config = configOf(KEYS);

  it('fine: admitted by the webhook from the config in force', () => {
    const pod = admitted(created(), ['agent-runtime', 'csi'], config);
    const judgement = judgePoolPod(sandbox(['agent-runtime', 'csi']), [pod], config, SETTINGS);
    expect(judgement).toMatchObject({
      kind: 'judged',
      state: 'fine',
      podUid: 'pod-1',
      podVersion: '7',
      ready: true,
      pool: { key: 'team/pool-a', uid: 'pool-uid' },
      runtimes: ['agent-runtime', 'csi'],
    });
    expect(judgement.kind === 'judged' && judgement.reason).toMatch(/^it records sha256:\w+, what the config/);
  });

  it('missing: no status annotation and none of the runtimes’ containers (the webhook never saw it)', () => {
    const judgement = judgePoolPod(sandbox(['agent-runtime']), [created()], config, SETTINGS);
    expect(state(judgement)).toBe('missing');
    expect(judgement.kind === 'judged' && judgement.reason).toContain('none of the containers of agent-runtime');
  });

  it('missing: Auto without a status annotation, even where the Sandbox controller injected the runtime', () => {
    const bySandboxController = created([{ name: 'main', image: 'app:1', command: ['run'] }]) as DeliveryPod & {
      spec: { initContainers?: unknown[] };
    };
    bySandboxController.spec.initContainers = [{ name: 'agent-runtime', image: 'agent-runtime:1' }];
    const judgement = judgePoolPod(
      sandbox(['agent-runtime'], { policy: 'Auto' }),
      [bySandboxController],
      config,
      SETTINGS,
    );
    expect(state(judgement)).toBe('missing');
    expect(judgement.kind === 'judged' && judgement.reason).toContain('policy Auto');
  });

  it('fine: the Sandbox controller injected the runtimes itself, and nothing else is asked (policy None)', () => {
    const pod = created() as DeliveryPod & { spec: { initContainers?: unknown[] } };
    pod.spec.initContainers = [{ name: 'agent-runtime', image: 'agent-runtime:1' }];
    expect(state(judgePoolPod(sandbox(['agent-runtime']), [pod], config, SETTINGS))).toBe('fine');
  });

  it('fine: runtimes the webhook found present are recorded with the revision, and match it', () => {
    const pod = created() as DeliveryPod & { spec: { initContainers?: unknown[] } };
    pod.spec.initContainers = [...(AGENT_CONFIG.csiSidecar ?? [])];
    const withStatus = admitted(pod, ['agent-runtime'], config, 'Auto');
    expect(JSON.parse(withStatus.metadata.annotations?.[STATUS_ANNOTATION] ?? '{}')).toMatchObject({
      present: ['agent-runtime'],
    });
    expect(state(judgePoolPod(sandbox(['agent-runtime'], { policy: 'Auto' }), [withStatus], config, SETTINGS))).toBe(
      'fine',
    );
  });

  it('stale: admitted before a used key changed; fine again for a change of a key it does not use', () => {
    const pod = admitted(created(), ['agent-runtime'], config);
    const edited = configOf({
      ...KEYS,
      'agent-runtime': JSON.stringify({ ...AGENT_CONFIG, volume: [{ name: 'v2' }] }),
    });
    const judgement = judgePoolPod(sandbox(['agent-runtime']), [pod], edited, SETTINGS);
    expect(state(judgement)).toBe('stale');
    expect(judgement.kind === 'judged' && judgement.reason).toMatch(
      /^it records sha256:\w{16}, the config in force gives sha256:\w{16} for agent-runtime$/,
    );
    const csiEdited = configOf({ ...KEYS, csi: JSON.stringify({ ...CSI_CONFIG, volume: [] }) });
    expect(state(judgePoolPod(sandbox(['agent-runtime']), [pod], csiEdited, SETTINGS))).toBe('fine');
  });

  it('stale: a runtime skipped at admission, which the config asks for and the pod lacks', () => {
    const conflicting = created([
      { name: 'main', image: 'app:1', command: ['run'] },
      { name: 'csi-sidecar', image: 'mine:1' },
    ]);
    const pod = admitted(conflicting, ['agent-runtime', 'csi'], config);
    const judgement = judgePoolPod(sandbox(['agent-runtime', 'csi']), [pod], config, SETTINGS);
    expect(state(judgement)).toBe('stale');
    expect(judgement.kind === 'judged' && judgement.reason).toContain(
      'skipped at its admission: csi (container-name-conflict)',
    );
  });

  it("a claimed Sandbox's pod is never judged, however stale", () => {
    const pod = admitted(created(), ['agent-runtime'], config);
    const edited = configOf({ ...KEYS, 'agent-runtime': JSON.stringify({ ...AGENT_CONFIG, volume: [] }) });
    expect(state(judgePoolPod(sandbox(['agent-runtime'], { claimed: true }), [pod], edited, SETTINGS))).toBe(
      'not judged: claimed',
    );
    const requested = sandbox(['agent-runtime']);
    requested.metadata = { ...requested.metadata, annotations: { 'agents.kruise.io/init-runtime-request': '{}' } };
    expect(state(judgePoolPod(requested, [created()], edited, SETTINGS))).toBe('not judged: claimed');
  });

  it('fine: a record without a revision (an older webhook) is not judged stale', () => {
    const pod = created();
    pod.metadata.annotations = {
      [STATUS_ANNOTATION]: JSON.stringify({ injected: ['agent-runtime'], present: [], skipped: [], wrapped: [] }),
    };
    const judgement = judgePoolPod(sandbox(['agent-runtime']), [pod], config, SETTINGS);
    expect(judgement).toMatchObject({
      state: 'fine',
      reason: expect.stringContaining('records no revision') as unknown,
    });
  });

  it('fine: no ConfigMap (pods are admitted unchanged), or a Sandbox that asks for no runtime', () => {
    expect(state(judgePoolPod(sandbox(['agent-runtime']), [created()], configOf(undefined), SETTINGS))).toBe('fine');
    expect(state(judgePoolPod(sandbox([], { policy: 'Auto' }), [created()], config, SETTINGS))).toBe('fine');
  });

  it('is not judged before the config is read, for a key with no usable version, or with no pod of its own', () => {
    expect(state(judgePoolPod(sandbox(['agent-runtime']), [created()], undefined, SETTINGS))).toBe(
      'not judged: no-config-yet',
    );
    expect(state(judgePoolPod(sandbox(['gpu']), [created()], config, SETTINGS))).toBe('not judged: key-unusable');
    expect(state(judgePoolPod(sandbox(['agent-runtime']), [], config, SETTINGS))).toBe('not judged: no-pod');
    expect(state(judgePoolPod(sandbox(['agent-runtime'], { podUid: 'other' }), [created()], config, SETTINGS))).toBe(
      'not judged: no-pod',
    );
  });

  it('is not judged for a Sandbox spec the webhook would deny', () => {
    const bad = sandbox(['agent-runtime'], { policy: 'Sometimes' });
    expect(state(judgePoolPod(bad, [created()], config, SETTINGS))).toBe('not judged: spec-invalid');
  });
});

describe('poolOf', () => {
  it('is the SandboxSet controller owner; a Sandbox without one (claimed, or made alone) has no pool', () => {
    expect(poolOf(sandbox([]))).toEqual({ key: 'team/pool-a', uid: 'pool-uid' });
    expect(poolOf(sandbox([], { owners: [] }))).toBeUndefined();
    expect(poolOf(sandbox([], { owners: [{ ...POOL_OWNER, controller: false }] }))).toBeUndefined();
    expect(poolOf(sandbox([], { owners: [{ ...POOL_OWNER, kind: 'ReplicaSet' }] }))).toBeUndefined();
  });
});
