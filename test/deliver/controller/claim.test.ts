import { Agent as HttpsAgent } from 'node:https';
import { describe, expect, it } from 'vitest';
import {
  claimDecision,
  markerOf,
  type ClaimSettings,
  type DeliverySandbox,
  type DeliveryPod,
} from '../../../src/deliver/controller/claim.js';
import { renderEnvFile } from '../../../src/envfile/render-env-file.js';

const SETTINGS: ClaimSettings = {
  runtimePort: 49983,
  trustRuntimeUrl: false,
  requireTls: false,
  allowHostNetwork: false,
  tls: { kind: 'none' },
};
const STATUS = 'agents.kruise.io/runtime-injection-status';
const REQUEST = 'agents.kruise.io/init-runtime-request';

interface SandboxShape {
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  podInfo?: { podIP?: unknown; podUID?: unknown };
}

/** By default the Sandbox names pod `pu` in status.podInfo.podUID, as upstream's controller writes it. */
function sandbox(shape: SandboxShape = {}): DeliverySandbox {
  return {
    metadata: { name: 's', namespace: 'n', uid: 'su', annotations: shape.annotations ?? {}, labels: shape.labels },
    status: { podInfo: shape.podInfo ?? { podUID: 'pu' } },
  };
}

interface PodShape {
  ip?: string;
  uid?: string;
  wrapped?: string[];
  phase?: string;
  deleting?: boolean;
  hostNetwork?: boolean;
}

/** A Running pod `pu` by default (without an IP unless given). */
function pod(options: PodShape = {}): DeliveryPod {
  return {
    metadata: {
      uid: options.uid ?? 'pu',
      annotations: {
        [STATUS]: JSON.stringify({ injected: [], present: [], skipped: [], wrapped: options.wrapped ?? ['main'] }),
      },
      ...(options.deleting === true ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { containers: [{ name: 'main' }], ...(options.hostNetwork === true ? { hostNetwork: true } : {}) },
    status: { phase: options.phase ?? 'Running', ...(options.ip === undefined ? {} : { podIP: options.ip }) },
  };
}

const request = (envVars: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ envVars, ...extra });
const claimed = (annotations: Record<string, string> = {}, extra: SandboxShape = {}) =>
  sandbox({ ...extra, annotations: { [REQUEST]: request({ A: '1' }, { accessToken: 'req' }), ...annotations } });

function target(decision: ReturnType<typeof claimDecision>) {
  if (decision.kind !== 'deliver') throw new Error(`expected deliver, got ${JSON.stringify(decision)}`);
  return decision.target;
}

describe('claimDecision: what is asked', () => {
  it('waits for a missing pod and for a pod with nothing wrapped', () => {
    expect(claimDecision(claimed({}, { podInfo: {} }), [], SETTINGS)).toMatchObject({ kind: 'wait', why: 'no-pod' });
    expect(claimDecision(claimed(), [pod({ ip: '10.0.0.1', wrapped: [] })], SETTINGS)).toMatchObject({
      kind: 'wait',
      why: 'not-wrapped',
    });
  });

  it('renders env.sh as env-file does, with the marker of that content', () => {
    const vars = { A: "it's", B: 'line\nbreak $HOME' };
    const t = target(
      claimDecision(
        sandbox({ annotations: { [REQUEST]: request(vars, { accessToken: 'tok' }) } }),
        [pod({ ip: '10.0.0.1' })],
        SETTINGS,
      ),
    );
    expect(t.content).toBe(renderEnvFile(vars));
    expect(t.marker).toBe(markerOf(renderEnvFile(vars)));
    expect(t).toMatchObject({ podUid: 'pu', variableCount: 2, empty: false });
    expect(t.endpoint).toEqual({ url: 'http://10.0.0.1:49983', tlsAgent: undefined, accessToken: 'tok' });
  });

  it('delivers an empty env.sh to a Sandbox claimed without a request (skip-init-runtime)', () => {
    const t = target(
      claimDecision(
        sandbox({ labels: { 'agents.kruise.io/sandbox-claimed': 'true' } }),
        [pod({ ip: '10.0.0.1' })],
        SETTINGS,
      ),
    );
    expect(t).toMatchObject({ empty: true, variableCount: 0, content: renderEnvFile([]) });
    expect(t.endpoint.accessToken).toBeUndefined();
  });

  it.each([['false'], [undefined]])('an unclaimed pod (claimed label %s, no request) is to be cleared', (label) => {
    const decision = claimDecision(
      sandbox({
        labels: label === undefined ? {} : { 'agents.kruise.io/sandbox-claimed': label },
        annotations: { 'agents.kruise.io/runtime-access-token': 'left-over' },
      }),
      [pod({ ip: '10.0.0.1' })],
      SETTINGS,
    );
    expect(decision).toMatchObject({ kind: 'unclaimed', podUid: 'pu' });
    // The token of the claim that ended comes from memory, never from what the recycled Sandbox still says.
    expect(decision.kind === 'unclaimed' && decision.endpoint).toEqual({
      url: 'http://10.0.0.1:49983',
      tlsAgent: undefined,
      accessToken: undefined,
    });
  });

  it.each([
    [{ 'agents.kruise.io/runtime-access-token': 'ann' }, 'ann'],
    [{ 'e2b.agents.kruise.io/envd-access-token': 'legacy' }, 'legacy'],
    [{ 'agents.kruise.io/runtime-access-token': 'ann', 'e2b.agents.kruise.io/envd-access-token': 'legacy' }, 'ann'],
    [{}, 'req'],
  ])('takes the token as upstream does: %j', (annotations, token) => {
    expect(target(claimDecision(claimed(annotations), [pod({ ip: '10.0.0.1' })], SETTINGS)).endpoint.accessToken).toBe(
      token,
    );
  });

  it.each([
    ['a bad name', request({ 'BAD-NAME': 'secret-value-1' }), {}, /invalid variable name "BAD-NAME"/],
    ['a non-string value', request({ A: 5 }), {}, /must be a string/],
    ['not JSON', '{"envVars": {"A": "secret-value-1"', {}, /not valid JSON/],
    ['an https URL', request({}), { 'agents.kruise.io/runtime-url': 'https://10.0.0.1:1' }, /only http/],
    [
      'credentials in the URL',
      request({}),
      { 'agents.kruise.io/runtime-url': 'http://u:secret-value-1@10.0.0.1:1' },
      /credentials/,
    ],
    ['not a URL', request({}), { 'agents.kruise.io/runtime-url': 'secret-value-1' }, /not a URL/],
    ['a token that is not ASCII', request({}, { accessToken: 'tök secret-value-1' }), {}, /not printable ASCII/],
    [
      'a TLS port that is no port',
      request({}),
      { 'agents.kruise.io/runtime-tls-port': '70000' },
      /is not a port from 1 to 65535/,
    ],
  ])('refuses %s, naming no value', (_what, text, annotations, reason) => {
    const decision = claimDecision(
      sandbox({ annotations: { [REQUEST]: text, ...annotations } }),
      [pod({ ip: '10.0.0.1' })],
      SETTINGS,
    );
    expect(decision).toMatchObject({ kind: 'refused', event: 'EnvRequestRefused' });
    if (decision.kind !== 'refused') return;
    expect(decision.reason).toMatch(reason);
    expect(decision.reason).not.toContain('secret-value-1');
  });
});

describe('claimDecision: the right pod', () => {
  it("takes the address from the pod's own status, never the Sandbox's copy of it", () => {
    const decision = claimDecision(
      claimed({}, { podInfo: { podIP: '10.0.0.9', podUID: 'pu' } }),
      [pod({ ip: '10.0.0.2' })],
      SETTINGS,
    );
    expect(target(decision).endpoint.url).toBe('http://10.0.0.2:49983');
    // A pod with no IP of its own waits, whatever status.podInfo.podIP says.
    const noIp = claimDecision(claimed({}, { podInfo: { podIP: '10.0.0.9', podUID: 'pu' } }), [pod()], SETTINGS);
    expect(noIp).toMatchObject({ kind: 'wait', why: 'no-address' });
  });

  it('waits quietly for a pod that does not run yet, even with an IP', () => {
    expect(claimDecision(claimed(), [pod({ ip: '10.0.0.2', phase: 'Pending' })], SETTINGS)).toMatchObject({
      kind: 'wait',
      why: 'no-address',
    });
  });

  it('goes to the pod status.podInfo.podUID names, whichever pods are listed first', () => {
    const decision = claimDecision(
      claimed({}, { podInfo: { podUID: 'b' } }),
      [pod({ uid: 'a', ip: '10.0.0.1', deleting: true }), pod({ uid: 'b', ip: '10.0.0.2' })],
      SETTINGS,
    );
    expect(target(decision)).toMatchObject({ podUid: 'b', endpoint: { url: 'http://10.0.0.2:49983' } });
  });

  it.each([
    ['no podUID yet', { podIP: '10.0.0.2' }, [pod({ ip: '10.0.0.2' })], 'no-pod-uid'],
    ['a podUID that names no pod', { podUID: 'gone' }, [pod({ ip: '10.0.0.2' })], 'pod-gone'],
    [
      'a podUID that names a pod being deleted',
      { podUID: 'pu' },
      [pod({ ip: '10.0.0.2', deleting: true })],
      'pod-gone',
    ],
    [
      'a Failed pod, whose IP the network may have handed on',
      { podUID: 'pu' },
      [pod({ ip: '10.0.0.2', phase: 'Failed' })],
      'terminal',
    ],
    ['a Succeeded pod', { podUID: 'pu' }, [pod({ ip: '10.0.0.2', phase: 'Succeeded' })], 'terminal'],
    [
      'a second live pod claiming the Sandbox',
      { podUID: 'pu' },
      [pod({ ip: '10.0.0.2' }), pod({ uid: 'stranger', ip: '10.0.0.3' })],
      'ambiguous',
    ],
    [
      'a hostNetwork pod, whose IP is its node',
      { podUID: 'pu' },
      [pod({ ip: '10.0.0.2', hostNetwork: true })],
      'host-network',
    ],
  ])('holds, sending nothing, for %s', (_what, podInfo, pods, kind) => {
    const decision = claimDecision(claimed({}, { podInfo }), pods, SETTINGS);
    expect(decision).toMatchObject({ kind: 'held', case: kind, warn: true });
    if (decision.kind === 'held') expect(decision.reason).not.toContain('secret');
  });

  it('a terminal pod beside its replacement: held until the Sandbox names the new one, then the new one', () => {
    const pods = [pod({ uid: 'old', ip: '10.0.0.2', phase: 'Failed' }), pod({ uid: 'new', ip: '10.0.0.2' })];
    expect(claimDecision(claimed({}, { podInfo: { podUID: 'old' } }), pods, SETTINGS)).toMatchObject({
      kind: 'held',
      case: 'terminal',
    });
    expect(target(claimDecision(claimed({}, { podInfo: { podUID: 'new' } }), pods, SETTINGS)).podUid).toBe('new');
  });

  it('warns of a pod being made or replaced only while a claim waits; of a suspicious pod always', () => {
    const unclaimed = (podInfo: SandboxShape['podInfo'], pods: DeliveryPod[]) =>
      claimDecision(sandbox({ podInfo }), pods, SETTINGS);
    expect(unclaimed({}, [pod()])).toMatchObject({ kind: 'held', case: 'no-pod-uid', warn: false });
    expect(unclaimed({ podUID: 'gone' }, [])).toMatchObject({ kind: 'held', case: 'pod-gone', warn: false });
    expect(unclaimed({ podUID: 'pu' }, [pod(), pod({ uid: 'x' })])).toMatchObject({ case: 'ambiguous', warn: true });
    const paused: DeliverySandbox = { ...claimed({}, { podInfo: { podUID: 'gone' } }), spec: { paused: true } };
    expect(claimDecision(paused, [], SETTINGS)).toMatchObject({ kind: 'held', case: 'pod-gone', warn: false });
    // Nothing at all: a pool being filled.
    expect(claimDecision(sandbox({ podInfo: {} }), [], SETTINGS)).toMatchObject({ kind: 'wait', why: 'no-pod' });
  });

  it('a change of any candidate changes the inputs', () => {
    const base = claimDecision(claimed(), [pod({ ip: '10.0.0.2' })], SETTINGS).inputs;
    expect(claimDecision(claimed(), [pod({ ip: '10.0.0.2' }), pod({ uid: 'x' })], SETTINGS).inputs).not.toBe(base);
    expect(claimDecision(claimed(), [pod({ ip: '10.0.0.2', phase: 'Failed' })], SETTINGS).inputs).not.toBe(base);
    expect(claimDecision(claimed(), [pod({ ip: '10.0.0.2', hostNetwork: true })], SETTINGS).inputs).not.toBe(base);
    const two = [pod({ uid: 'a' }), pod({ uid: 'b' })];
    expect(claimDecision(claimed(), two, SETTINGS).inputs).toBe(
      claimDecision(claimed(), [...two].reverse(), SETTINGS).inputs,
    );
  });

  it('brackets an IPv6 pod IP', () => {
    expect(target(claimDecision(claimed(), [pod({ ip: 'fd00::1' })], SETTINGS)).endpoint.url).toBe(
      'http://[fd00::1]:49983',
    );
  });

  it.each([
    [{ 'agents.kruise.io/runtime-url': 'http://10.0.0.2:1234/' }, 'http://10.0.0.2:1234'],
    [{ 'e2b.agents.kruise.io/envd-url': 'http://10.0.0.2:5' }, 'http://10.0.0.2:5'],
    [
      { 'agents.kruise.io/runtime-url': 'http://10.0.0.2:1', 'e2b.agents.kruise.io/envd-url': 'http://10.0.0.3:2' },
      'http://10.0.0.2:1',
    ],
  ])("follows a runtime URL whose host is the pod's IP: %j", (annotations, url) => {
    expect(target(claimDecision(claimed(annotations), [pod({ ip: '10.0.0.2' })], SETTINGS)).endpoint.url).toBe(url);
  });

  it('follows an IPv6 runtime URL of the pod, in any spelling', () => {
    const decision = claimDecision(
      claimed({ 'agents.kruise.io/runtime-url': 'http://[fd00:0::1]:7' }),
      [pod({ ip: 'fd00::1' })],
      SETTINGS,
    );
    expect(target(decision).endpoint.url).toBe('http://[fd00::1]:7');
  });

  it.each([
    ['another IP', 'http://10.0.0.3:1234'],
    ['a host name', 'http://runtime.example:1234'],
    ['the stale IP of the deleted pod', 'http://10.0.0.9:49983'],
  ])('refuses a runtime URL naming %s, unless trusted', (_what, url) => {
    const annotations = { 'agents.kruise.io/runtime-url': url };
    const decision = claimDecision(claimed(annotations), [pod({ ip: '10.0.0.2' })], SETTINGS);
    expect(decision).toMatchObject({ kind: 'refused', event: 'RuntimeUrlRefused' });
    expect(decision.kind === 'refused' && decision.reason).toMatch(
      /not the pod's IP \(10\.0\.0\.2\).*--trust-runtime-url/,
    );
    const trusted = claimDecision(claimed(annotations), [pod({ ip: '10.0.0.2' })], {
      ...SETTINGS,
      trustRuntimeUrl: true,
      requireTls: false,
      allowHostNetwork: false,
    });
    expect(target(trusted).endpoint.url).toBe(url.replace(/\/$/, ''));
  });

  it('waits for an address before it judges a runtime URL', () => {
    const decision = claimDecision(claimed({ 'agents.kruise.io/runtime-url': 'http://10.0.0.2:1' }), [pod()], SETTINGS);
    expect(decision).toMatchObject({ kind: 'wait', why: 'no-address' });
  });
});

describe('claimDecision: TLS runtimes', () => {
  const agent = new HttpsAgent();
  const tls = { kind: 'ok', agent, version: 1 } as const;

  it('speaks HTTPS to the pod IP at the advertised port, through the bundle agent, ignoring runtime URLs', () => {
    const decision = claimDecision(
      claimed({ 'agents.kruise.io/runtime-tls-port': '49984', 'agents.kruise.io/runtime-url': 'http://10.0.0.7:1' }),
      [pod({ ip: '10.0.0.2' })],
      { ...SETTINGS, tls },
    );
    expect(target(decision).endpoint).toMatchObject({ url: 'https://10.0.0.2:49984', tlsAgent: agent });
  });

  it.each([
    [{ kind: 'none' } as const, /no bundle is configured/],
    [{ kind: 'broken', reason: 'ca.crt is missing' } as const, /unusable: ca\.crt is missing/],
  ])('refuses, never in clear, when the bundle is %j', (bundle, reason) => {
    const decision = claimDecision(
      claimed({ 'agents.kruise.io/runtime-tls-port': '49984' }),
      [pod({ ip: '10.0.0.2' })],
      {
        ...SETTINGS,
        tls: bundle,
      },
    );
    expect(decision).toMatchObject({ kind: 'refused', event: 'RuntimeTlsUnconfigured' });
    expect(decision.kind === 'refused' && decision.reason).toMatch(reason);
  });
});

describe('claimDecision: inputs', () => {
  const base = () => claimDecision(claimed(), [pod({ ip: '10.0.0.1' })], SETTINGS).inputs;

  it('is the same for the same inputs, whatever else of the objects changes', () => {
    const other = claimed();
    other.metadata = { ...other.metadata, resourceVersion: '99' };
    expect(claimDecision(other, [pod({ ip: '10.0.0.1' })], SETTINGS).inputs).toBe(base());
  });

  it.each([
    [
      'the request',
      () =>
        claimDecision(
          sandbox({ annotations: { [REQUEST]: request({ A: '2' }) } }),
          [pod({ ip: '10.0.0.1' })],
          SETTINGS,
        ),
    ],
    [
      'the token',
      () =>
        claimDecision(claimed({ 'agents.kruise.io/runtime-access-token': 't' }), [pod({ ip: '10.0.0.1' })], SETTINGS),
    ],
    ['the pod', () => claimDecision(claimed(), [pod({ ip: '10.0.0.1', uid: 'other' })], SETTINGS)],
    ['the pod IP', () => claimDecision(claimed(), [pod({ ip: '10.0.0.2' })], SETTINGS)],
    [
      'the claimed label',
      () =>
        claimDecision(
          claimed({}, { labels: { 'agents.kruise.io/sandbox-claimed': 'true' } }),
          [pod({ ip: '10.0.0.1' })],
          SETTINGS,
        ),
    ],
    [
      'the TLS bundle',
      () =>
        claimDecision(claimed(), [pod({ ip: '10.0.0.1' })], {
          ...SETTINGS,
          tls: { kind: 'ok', agent: new HttpsAgent(), version: 2 },
        }),
    ],
  ])('changes with %s', (_what, decide) => {
    expect(decide().inputs).not.toBe(base());
  });

  // Upstream's names, written out: a key that reads from the shared list could not notice a name left off it.
  it.each([
    'agents.kruise.io/init-runtime-request',
    'agents.kruise.io/runtime-url',
    'e2b.agents.kruise.io/envd-url',
    'agents.kruise.io/runtime-access-token',
    'e2b.agents.kruise.io/envd-access-token',
    'agents.kruise.io/runtime-tls-port',
    'agents.kruise.io/claim-timestamp',
  ])('changes when annotation %s, which delivery reads, is set or changed', (name) => {
    const decide = (annotations: Record<string, string>) =>
      claimDecision(claimed(annotations), [pod({ ip: '10.0.0.1' })], SETTINGS).inputs;
    expect(decide({ [name]: 'one' })).not.toBe(base());
    expect(decide({ [name]: 'two' })).not.toBe(decide({ [name]: 'one' }));
  });

  it.each([
    ['an annotation delivery does not read', claimed({ 'agents.kruise.io/runtimes': 'agent-runtime' })],
    ['a label other than the claimed one', claimed({}, { labels: { 'agents.kruise.io/sandbox-pool': 'p' } })],
  ])('stays the same with %s', (_what, sandbox) => {
    expect(claimDecision(sandbox, [pod({ ip: '10.0.0.1' })], SETTINGS).inputs).toBe(base());
  });
});

describe('claimDecision: --require-runtime-tls and --allow-host-network', () => {
  const REQUIRE = { ...SETTINGS, requireTls: true };

  it.each([
    ['no runtime URL', {}],
    ['a runtime URL of the pod', { 'agents.kruise.io/runtime-url': 'http://10.0.0.2:1234' }],
    ['an empty TLS port', { 'agents.kruise.io/runtime-tls-port': '' }],
  ])('refuses a plain HTTP runtime when TLS is required: %s', (_what, annotations) => {
    for (const settings of [REQUIRE, { ...REQUIRE, trustRuntimeUrl: true }]) {
      const decision = claimDecision(claimed(annotations), [pod({ ip: '10.0.0.2' })], settings);
      expect(decision).toMatchObject({ kind: 'refused', event: 'RuntimeTlsRequired' });
      // Unclaimed too: clearing would send the last claim's token in clear.
      expect(claimDecision(sandbox({ annotations }), [pod({ ip: '10.0.0.2' })], settings)).toMatchObject({
        kind: 'refused',
        event: 'RuntimeTlsRequired',
      });
    }
  });

  it('still delivers to a TLS runtime when TLS is required', () => {
    const agent = new HttpsAgent();
    const decision = claimDecision(
      claimed({ 'agents.kruise.io/runtime-tls-port': '49984' }),
      [pod({ ip: '10.0.0.2' })],
      { ...REQUIRE, tls: { kind: 'ok', agent, version: 1 } },
    );
    expect(target(decision).endpoint).toMatchObject({ url: 'https://10.0.0.2:49984', tlsAgent: agent });
  });

  it('takes a hostNetwork pod only when the operator allows it', () => {
    const hostPod = [pod({ ip: '10.0.0.2', hostNetwork: true })];
    expect(claimDecision(claimed(), hostPod, SETTINGS)).toMatchObject({ kind: 'held', case: 'host-network' });
    const allowed = claimDecision(claimed(), hostPod, { ...SETTINGS, allowHostNetwork: true });
    expect(target(allowed).endpoint.url).toBe('http://10.0.0.2:49983');
    expect(allowed.inputs).not.toBe(claimDecision(claimed(), hostPod, SETTINGS).inputs);
  });
});
