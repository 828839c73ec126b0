// explain's view of deliver-env, from plain objects: deliver-env's own decision on them, and its Events read back
// as deliver-env writes them (eventFor, eventObject), so a change of their wording shows here.
import { describe, expect, it } from 'vitest';
import type { DeliveryPod, DeliverySandbox } from '../../../src/deliver/controller/claim.js';
import { eventFor, eventObject } from '../../../src/deliver/controller/events.js';
import type { DeliveryOutcome } from '../../../src/deliver/controller/outcome.js';
import { explainDelivery, lastDeliveryEvent, podUidIn } from '../../../src/cli/explain/delivery.js';
import type { DeliveryFacts, SandboxEventRecord } from '../../../src/cli/explain/delivery-facts.js';
import { deliverySection } from '../../../src/cli/explain/delivery-render.js';
import { wrappedSandboxPod } from '../../support/wrapped-sandbox-pod.js';

const NOW = Date.parse('2030-01-01T10:00:00Z');
const SANDBOX_UID = '0a0a0a0a-0000-4000-8000-000000000001';
const POD_UID = '0b0b0b0b-0000-4000-8000-000000000002';
const OTHER_UID = '0c0c0c0c-0000-4000-8000-000000000003';
const REQUEST = JSON.stringify({ envVars: { API_KEY: 'sk-1', GREETING: 'hi' }, accessToken: 'tok' });

function sandbox(
  options: { claimed?: boolean; podUid?: string; paused?: boolean; annotations?: Record<string, string> } = {},
): DeliverySandbox {
  const claimed = options.claimed ?? false;
  return {
    metadata: {
      name: 'sbx-1',
      namespace: 'team-a',
      uid: SANDBOX_UID,
      labels: { 'agents.kruise.io/sandbox-claimed': String(claimed) },
      annotations: {
        ...(claimed
          ? {
              'agents.kruise.io/init-runtime-request': REQUEST,
              'agents.kruise.io/claim-timestamp': '2030-01-01T09:59:58Z',
            }
          : {}),
        ...options.annotations,
      },
    },
    ...(options.paused === undefined ? {} : { spec: { paused: options.paused } }),
    ...(options.podUid === undefined ? {} : { status: { podInfo: { podUID: options.podUid } } }),
  };
}

function runningPod(uid: string, name = 'sbx-1', ip = '10.0.0.7'): DeliveryPod {
  const pod = wrappedSandboxPod({
    sandbox: 'sbx-1',
    sandboxUid: SANDBOX_UID,
    namespace: 'team-a',
    name,
  }) as unknown as DeliveryPod;
  pod.metadata.uid = uid;
  (pod as { status?: unknown }).status = { phase: 'Running', podIP: ip };
  return pod;
}

/** An Event as deliver-env records it for `outcome`, read back as explain reads Events. */
function recorded(outcome: DeliveryOutcome, at: string, resourceVersion = '100'): SandboxEventRecord {
  const event = eventFor(outcome);
  if (event === undefined) throw new Error('no Event for that outcome');
  const object = eventObject(sandbox(), event, Date.parse(at), 'replica-a');
  return {
    reason: object.reason ?? '',
    type: object.type ?? '',
    message: object.message ?? '',
    at: new Date(Date.parse(at)).toISOString().replace(/\.\d+Z$/, 'Z'),
    component: object.source?.component,
    resourceVersion,
  };
}

const delivered = (podUid: string): DeliveryOutcome => ({
  kind: 'delivered',
  key: 'team-a/sbx-1',
  podUid,
  delivery: 'claim',
  variables: 2,
  requests: 4,
  claimToReadyMs: 300,
  seenToReadyMs: 200,
});
const cleared = (podUid: string): DeliveryOutcome => ({
  kind: 'delivered',
  key: 'team-a/sbx-1',
  podUid,
  delivery: 'cleared',
  variables: 0,
  requests: 5,
  claimToReadyMs: undefined,
  seenToReadyMs: 0,
});
const unauthorized: DeliveryOutcome = {
  kind: 'failed',
  key: 'team-a/sbx-1',
  podUid: POD_UID,
  reason: 'unauthorized',
  event: 'EnvDeliveryFailed',
  code: 'SI_ENVD_UNAUTHORIZED',
  message: 'POST /filesystem.Filesystem/ListDir: HTTP 401 (token refused)',
  retrying: false,
  firstOfStreak: true,
};

function facts(more: Partial<DeliveryFacts>): DeliveryFacts {
  return {
    sandbox: sandbox(),
    pods: [],
    events: [],
    lease: {
      state: 'held',
      name: 'sandbox-injector-system/sandbox-injector-deliver-env',
      holder: 'replica-a',
      endsAt: NOW + 10_000,
    },
    settings: {
      runtimePort: 49983,
      trustRuntimeUrl: false,
      requireTls: false,
      allowHostNetwork: false,
      tls: { kind: 'none' },
    },
    recycledPods: 'restart',
    now: NOW,
    ...more,
  };
}

describe('explainDelivery, in the cases the docs show', () => {
  it('unclaimed: the pod is the one an earlier claim would be cleared from, and nothing is to be done', () => {
    const found = explainDelivery(facts({ sandbox: sandbox({ podUid: POD_UID }), pods: [runningPod(POD_UID)] }));
    expect(found).toMatchObject({
      claimed: false,
      pod: { name: 'sbx-1', uid: POD_UID },
      decision: { kind: 'unclaimed' },
      env: 'none',
      next: ['nothing: the pod waits for its next claim'],
    });
    expect(found.claim).toBeUndefined();
  });

  it('claimed and delivered: the newest Event is EnvDelivered for the pod the Sandbox names', () => {
    const found = explainDelivery(
      facts({
        sandbox: sandbox({ claimed: true, podUid: POD_UID }),
        pods: [runningPod(POD_UID)],
        events: [recorded(delivered(POD_UID), '2030-01-01T09:59:59Z')],
      }),
    );
    expect(found).toMatchObject({
      claimed: true,
      claim: {
        by: ['label agents.kruise.io/sandbox-claimed=true', 'annotation agents.kruise.io/init-runtime-request'],
        at: '2030-01-01T09:59:58Z',
      },
      pod: { name: 'sbx-1', uid: POD_UID, why: "the Sandbox's status.podInfo.podUID names it; Running, IP 10.0.0.7" },
      decision: { kind: 'deliver', detail: 'env.sh with 2 variables, then .env_ready, through http://10.0.0.7:49983' },
      lastEvent: { reason: 'EnvDelivered', type: 'Normal', at: '2030-01-01T09:59:59Z' },
      env: 'delivered',
    });
    expect(found.next[0]).toMatch(/^nothing: the wrapped commands start/);
  });

  it('claimed with no pod: nothing to deliver to, and what to look at', () => {
    const found = explainDelivery(facts({ sandbox: sandbox({ claimed: true }) }));
    expect(found).toMatchObject({
      pod: { why: expect.stringMatching(/^no pod claims the Sandbox/) as unknown },
      decision: { kind: 'wait', case: 'no-pod' },
      env: 'not-delivered',
    });
    expect(found.next[0]).toMatch(/^wait for upstream's controller to make the pod/);
    const paused = explainDelivery(facts({ sandbox: sandbox({ claimed: true, paused: true }) }));
    expect(paused.decision.detail).toBe('no pod to deliver to (the Sandbox is paused)');
    expect(paused.next).toEqual(['the Sandbox is paused: a resume makes its pod, and the claim goes there']);
  });

  it('claimed with a second pod claiming the Sandbox: held as ambiguous, and the pod to find', () => {
    const found = explainDelivery(
      facts({
        sandbox: sandbox({ claimed: true, podUid: POD_UID }),
        pods: [runningPod(POD_UID), runningPod(OTHER_UID, 'intruder', '10.0.0.8')],
      }),
    );
    expect(found).toMatchObject({
      pod: { uid: POD_UID },
      decision: { kind: 'held', case: 'ambiguous' },
      env: 'not-delivered',
    });
    expect(found.pod.name).toBeUndefined();
    expect(found.pod.why).toContain(OTHER_UID);
    expect(found.next[0]).toMatch(/^another live pod claims the Sandbox: find who made it/);
  });

  it('claimed while envd refuses the token: not delivered, and the token to check', () => {
    const found = explainDelivery(
      facts({
        sandbox: sandbox({ claimed: true, podUid: POD_UID }),
        pods: [runningPod(POD_UID)],
        events: [recorded(unauthorized, '2030-01-01T09:59:59Z')],
      }),
    );
    expect(found).toMatchObject({
      decision: { kind: 'deliver' },
      lastEvent: { reason: 'EnvDeliveryFailed', type: 'Warning' },
      env: 'not-delivered',
    });
    expect(found.lastEvent?.message).toMatch(/^unauthorized: .*HTTP 401/);
    expect(found.next[0]).toMatch(/^envd refuses the token/);
  });

  it('cleared after a recycle: not claimed, and the newest Event removed the files from this pod', () => {
    const found = explainDelivery(
      facts({
        sandbox: sandbox({ podUid: POD_UID }),
        pods: [runningPod(POD_UID)],
        // Delivered and cleared within one second: the write order tells which came last.
        events: [
          recorded(cleared(POD_UID), '2030-01-01T09:59:59Z', '205'),
          recorded(delivered(POD_UID), '2030-01-01T09:59:59Z', '204'),
        ],
      }),
    );
    expect(found).toMatchObject({
      claimed: false,
      decision: { kind: 'unclaimed' },
      lastEvent: { reason: 'EnvCleared' },
      env: 'cleared',
    });
    expect(found.next).toEqual(['nothing: the pod waits for its next claim']);
  });
});

describe('explainDelivery, what else holds a claim up', () => {
  it('puts a missing leader first, whatever else is wrong', () => {
    const found = explainDelivery(
      facts({
        sandbox: sandbox({ claimed: true }),
        lease: { state: 'held', name: 'ns/l', holder: 'replica-a', endsAt: NOW - 30_000 },
      }),
    );
    expect(found.leader).toEqual({
      state: 'not-held',
      lease: 'ns/l',
      why: 'held by replica-a, expired 30s ago: no replica delivers',
    });
    expect(found.next[0]).toMatch(/^deliver-env is not leading \(held by replica-a, expired 30s ago/);
    expect(found.next).toHaveLength(2);
  });

  it("refuses what deliver-env refuses, with deliver-env's reason: a runtime URL to another host", () => {
    const found = explainDelivery(
      facts({
        sandbox: sandbox({
          claimed: true,
          podUid: POD_UID,
          annotations: { 'agents.kruise.io/runtime-url': 'http://10.9.9.9:49983' },
        }),
        pods: [runningPod(POD_UID)],
      }),
    );
    expect(found.decision).toMatchObject({ kind: 'refused', case: 'RuntimeUrlRefused' });
    expect(found.next[0]).toMatch(/^find who wrote the runtime URL annotation/);
    const trusted = explainDelivery(
      facts({
        sandbox: sandbox({
          claimed: true,
          podUid: POD_UID,
          annotations: { 'agents.kruise.io/runtime-url': 'http://10.9.9.9:49983' },
        }),
        pods: [runningPod(POD_UID)],
        settings: {
          runtimePort: 49983,
          trustRuntimeUrl: true,
          requireTls: false,
          allowHostNetwork: false,
          tls: { kind: 'none' },
        },
      }),
    );
    expect(trusted.decision).toMatchObject({
      kind: 'deliver',
      detail: expect.stringContaining('http://10.9.9.9:49983') as unknown,
    });
  });

  it('reads a delivery to an earlier pod as not delivered to this one', () => {
    const found = explainDelivery(
      facts({
        sandbox: sandbox({ claimed: true, podUid: POD_UID }),
        pods: [runningPod(POD_UID)],
        events: [recorded(delivered(OTHER_UID), '2030-01-01T09:59:59Z')],
      }),
    );
    expect(found.env).toBe('not-delivered');
    expect(found.next[0]).toBe(`the claim went to an earlier pod (${OTHER_UID}); sbx-1 gets it once it runs`);
  });

  it("reads an unclaimed pod that deliver-env could not clear as keeping the last claim's files", () => {
    const notCleared: DeliveryOutcome = { ...unauthorized, event: 'EnvNotCleared' };
    const found = explainDelivery(
      facts({
        sandbox: sandbox({ podUid: POD_UID }),
        pods: [runningPod(POD_UID)],
        events: [recorded(delivered(POD_UID), '2030-01-01T09:00:00Z'), recorded(notCleared, '2030-01-01T09:10:00Z')],
      }),
    );
    expect(found).toMatchObject({ env: 'not-cleared', lastEvent: { reason: 'EnvNotCleared' } });
    expect(found.next).toEqual([
      "the last claim's files stay in sbx-1: recreate the pod if they must not (kubectl delete pod sbx-1)",
    ]);
    const elsewhere = explainDelivery(
      facts({
        sandbox: sandbox({ podUid: POD_UID }),
        pods: [runningPod(POD_UID)],
        events: [recorded(cleared(OTHER_UID), '2030-01-01T09:00:00Z')],
      }),
    );
    expect(elsewhere.env).toBe('none');
  });

  it('notes when there is no Event to go by, and when Events cannot be read', () => {
    expect(explainDelivery(facts({ sandbox: sandbox({ claimed: true }) })).notes[0]).toMatch(
      /^no Event of deliver-env's/,
    );
    const unread = explainDelivery(facts({ events: undefined, eventsProblem: 'GET ...: 403: forbidden' }));
    expect(unread.notes).toEqual(["deliver-env's Events could not be read: GET ...: 403: forbidden"]);
  });
});

describe('reading Events back', () => {
  it("finds the pod each of deliver-env's messages names", () => {
    expect(podUidIn(recorded(delivered(POD_UID), '2030-01-01T09:00:00Z').message)).toBe(POD_UID);
    expect(podUidIn(recorded(cleared(POD_UID), '2030-01-01T09:00:00Z').message)).toBe(POD_UID);
    expect(podUidIn(recorded(unauthorized, '2030-01-01T09:00:00Z').message)).toBeUndefined();
  });

  it("takes only deliver-env's Events, the newest by time, then by write order", () => {
    const a = recorded(delivered(POD_UID), '2030-01-01T09:00:01Z', '9');
    const later = recorded(delivered(OTHER_UID), '2030-01-01T09:00:02Z', '3');
    const other = { ...a, reason: 'Scheduled', at: '2030-01-01T09:00:05Z' };
    const someoneElse = { ...a, component: 'kubelet', at: '2030-01-01T09:00:06Z' };
    expect(lastDeliveryEvent([later, a, other, someoneElse], true)).toBe(later);
    expect(lastDeliveryEvent([a, { ...a, resourceVersion: '10' }], true)?.resourceVersion).toBe('10');
    expect(lastDeliveryEvent([], true)).toBeUndefined();
  });

  it("reads a claimed Sandbox's clearing Events as an earlier claim's, whenever they were written", () => {
    const notCleared = recorded({ ...unauthorized, event: 'EnvNotCleared' }, '2030-01-01T09:00:01Z', '12');
    const delivery = recorded(delivered(POD_UID), '2030-01-01T09:00:01Z', '11');
    expect(lastDeliveryEvent([delivery, notCleared], true)).toBe(delivery);
    expect(lastDeliveryEvent([notCleared], true)).toBeUndefined();
  });

  it('within one second, takes a delivery after failures, and a clearing after the delivery it ends', () => {
    const failure = recorded(unauthorized, '2030-01-01T09:00:01Z', '21');
    const delivery = recorded(delivered(POD_UID), '2030-01-01T09:00:01Z', '20');
    const clearing = recorded(cleared(POD_UID), '2030-01-01T09:00:01Z', '19');
    expect(lastDeliveryEvent([failure, delivery], true)).toBe(delivery);
    expect(lastDeliveryEvent([clearing, delivery], false)).toBe(clearing);
  });
});

describe('deliverySection', () => {
  it('renders one line per question and the next steps last', () => {
    const found = explainDelivery(
      facts({
        sandbox: sandbox({ claimed: true, podUid: POD_UID }),
        pods: [runningPod(POD_UID)],
        events: [recorded(unauthorized, '2030-01-01T09:59:59Z')],
      }),
    );
    const lines = deliverySection(found);
    expect(lines.slice(0, 7)).toEqual([
      'Delivery (deliver-env)',
      '  deliver-env: Lease sandbox-injector-system/sandbox-injector-deliver-env held by replica-a',
      '  claimed:     yes, by label agents.kruise.io/sandbox-claimed=true and annotation agents.kruise.io/init-runtime-request, at 2030-01-01T09:59:58Z',
      `  pod:         sbx-1 (uid ${POD_UID}): the Sandbox's status.podInfo.podUID names it; Running, IP 10.0.0.7`,
      '  decision:    deliver: env.sh with 2 variables, then .env_ready, through http://10.0.0.7:49983',
      '  last Event:  EnvDeliveryFailed (Warning) at 2030-01-01T09:59:59Z: unauthorized: POST /filesystem.Filesystem/ListDir: HTTP 401 (token refused); not retried until the Sandbox changes',
      '  env:         NOT delivered',
    ]);
    expect(lines[7]).toMatch(/^ {2}next: {8}envd refuses the token/);
  });
});
