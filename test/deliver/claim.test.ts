import { Agent as HttpsAgent } from 'node:https';
import { describe, expect, it } from 'vitest';
import {
  claimDecision,
  markerOf,
  type ClaimSettings,
  type DeliverySandbox,
  type DeliveryPod,
} from '../../src/deliver/claim.js';
import { renderEnvFile } from '../../src/envfile/render-env-file.js';

const SETTINGS: ClaimSettings = { runtimePort: 49983, trustRuntimeUrl: false, tls: { kind: 'none' } };
const STATUS = 'agents.kruise.io/runtime-injection-status';
const REQUEST = 'agents.kruise.io/init-runtime-request';

interface SandboxShape {
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  podInfo?: { podIP?: unknown; podUID?: unknown };
}

function sandbox(shape: SandboxShape = {}): DeliverySandbox {
  return {
    metadata: { name: 's', namespace: 'n', uid: 'su', annotations: shape.annotations ?? {}, labels: shape.labels },
    status: shape.podInfo === undefined ? {} : { podInfo: shape.podInfo },
  };
}

function pod(options: { ip?: string; uid?: string; wrapped?: string[] } = {}): DeliveryPod {
  return {
    metadata: {
      uid: options.uid ?? 'pu',
      annotations: {
        [STATUS]: JSON.stringify({ injected: [], present: [], skipped: [], wrapped: options.wrapped ?? ['main'] }),
      },
    },
    spec: { containers: [{ name: 'main' }] },
    status: options.ip === undefined ? {} : { podIP: options.ip },
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
    expect(claimDecision(claimed(), undefined, SETTINGS)).toMatchObject({ kind: 'wait', why: 'no-pod' });
    expect(claimDecision(claimed(), pod({ ip: '10.0.0.1', wrapped: [] }), SETTINGS)).toMatchObject({
      kind: 'wait',
      why: 'not-wrapped',
    });
  });

  it('renders env.sh as env-file does, with the marker of that content', () => {
    const vars = { A: "it's", B: 'line\nbreak $HOME' };
    const t = target(
      claimDecision(
        sandbox({ annotations: { [REQUEST]: request(vars, { accessToken: 'tok' }) } }),
        pod({ ip: '10.0.0.1' }),
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
        pod({ ip: '10.0.0.1' }),
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
      pod({ ip: '10.0.0.1' }),
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
    expect(target(claimDecision(claimed(annotations), pod({ ip: '10.0.0.1' }), SETTINGS)).endpoint.accessToken).toBe(
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
      pod({ ip: '10.0.0.1' }),
      SETTINGS,
    );
    expect(decision).toMatchObject({ kind: 'refused', event: 'EnvRequestRefused' });
    if (decision.kind !== 'refused') return;
    expect(decision.reason).toMatch(reason);
    expect(decision.reason).not.toContain('secret-value-1');
  });
});

describe('claimDecision: the right pod', () => {
  it("takes the address from the pod's own status", () => {
    const decision = claimDecision(
      claimed({}, { podInfo: { podIP: '10.0.0.9', podUID: 'old-pod' } }),
      pod({ ip: '10.0.0.2' }),
      SETTINGS,
    );
    expect(target(decision).endpoint.url).toBe('http://10.0.0.2:49983');
  });

  it("takes status.podInfo only when its podUID is this pod's UID", () => {
    const mine = claimDecision(claimed({}, { podInfo: { podIP: '10.0.0.9', podUID: 'pu' } }), pod(), SETTINGS);
    expect(target(mine).endpoint.url).toBe('http://10.0.0.9:49983');
    // After a pause and resume the Sandbox's status names the deleted pod until the new one runs.
    const stale = claimDecision(claimed({}, { podInfo: { podIP: '10.0.0.9', podUID: 'old-pod' } }), pod(), SETTINGS);
    expect(stale).toMatchObject({ kind: 'wait', why: 'no-address' });
    const noUid = claimDecision(claimed({}, { podInfo: { podIP: '10.0.0.9' } }), pod(), SETTINGS);
    expect(noUid).toMatchObject({ kind: 'wait', why: 'no-address' });
  });

  it('brackets an IPv6 pod IP', () => {
    expect(target(claimDecision(claimed(), pod({ ip: 'fd00::1' }), SETTINGS)).endpoint.url).toBe(
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
    expect(target(claimDecision(claimed(annotations), pod({ ip: '10.0.0.2' }), SETTINGS)).endpoint.url).toBe(url);
  });

  it('follows an IPv6 runtime URL of the pod, in any spelling', () => {
    const decision = claimDecision(
      claimed({ 'agents.kruise.io/runtime-url': 'http://[fd00:0::1]:7' }),
      pod({ ip: 'fd00::1' }),
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
    const decision = claimDecision(claimed(annotations), pod({ ip: '10.0.0.2' }), SETTINGS);
    expect(decision).toMatchObject({ kind: 'refused', event: 'RuntimeUrlRefused' });
    expect(decision.kind === 'refused' && decision.reason).toMatch(
      /not the pod's IP \(10\.0\.0\.2\).*--trust-runtime-url/,
    );
    const trusted = claimDecision(claimed(annotations), pod({ ip: '10.0.0.2' }), {
      ...SETTINGS,
      trustRuntimeUrl: true,
    });
    expect(target(trusted).endpoint.url).toBe(url.replace(/\/$/, ''));
  });

  it('waits for an address before it judges a runtime URL', () => {
    const decision = claimDecision(claimed({ 'agents.kruise.io/runtime-url': 'http://10.0.0.2:1' }), pod(), SETTINGS);
    expect(decision).toMatchObject({ kind: 'wait', why: 'no-address' });
  });
});

describe('claimDecision: TLS runtimes', () => {
  const agent = new HttpsAgent();
  const tls = { kind: 'ok', agent, version: 1 } as const;

  it('speaks HTTPS to the pod IP at the advertised port, through the bundle agent, ignoring runtime URLs', () => {
    const decision = claimDecision(
      claimed({ 'agents.kruise.io/runtime-tls-port': '49984', 'agents.kruise.io/runtime-url': 'http://10.0.0.7:1' }),
      pod({ ip: '10.0.0.2' }),
      { ...SETTINGS, tls },
    );
    expect(target(decision).endpoint).toMatchObject({ url: 'https://10.0.0.2:49984', tlsAgent: agent });
  });

  it.each([
    [{ kind: 'none' } as const, /no bundle is configured/],
    [{ kind: 'broken', reason: 'ca.crt is missing' } as const, /unusable: ca\.crt is missing/],
  ])('refuses, never in clear, when the bundle is %j', (bundle, reason) => {
    const decision = claimDecision(claimed({ 'agents.kruise.io/runtime-tls-port': '49984' }), pod({ ip: '10.0.0.2' }), {
      ...SETTINGS,
      tls: bundle,
    });
    expect(decision).toMatchObject({ kind: 'refused', event: 'RuntimeTlsUnconfigured' });
    expect(decision.kind === 'refused' && decision.reason).toMatch(reason);
  });
});

describe('claimDecision: inputs', () => {
  const base = () => claimDecision(claimed(), pod({ ip: '10.0.0.1' }), SETTINGS).inputs;

  it('is the same for the same inputs, whatever else of the objects changes', () => {
    const other = claimed();
    other.metadata = { ...other.metadata, resourceVersion: '99' };
    expect(claimDecision(other, pod({ ip: '10.0.0.1' }), SETTINGS).inputs).toBe(base());
  });

  it.each([
    [
      'the request',
      () =>
        claimDecision(sandbox({ annotations: { [REQUEST]: request({ A: '2' }) } }), pod({ ip: '10.0.0.1' }), SETTINGS),
    ],
    [
      'the token',
      () => claimDecision(claimed({ 'agents.kruise.io/runtime-access-token': 't' }), pod({ ip: '10.0.0.1' }), SETTINGS),
    ],
    ['the pod', () => claimDecision(claimed(), pod({ ip: '10.0.0.1', uid: 'other' }), SETTINGS)],
    ['the pod IP', () => claimDecision(claimed(), pod({ ip: '10.0.0.2' }), SETTINGS)],
    [
      'the claimed label',
      () =>
        claimDecision(
          claimed({}, { labels: { 'agents.kruise.io/sandbox-claimed': 'true' } }),
          pod({ ip: '10.0.0.1' }),
          SETTINGS,
        ),
    ],
    [
      'the TLS bundle',
      () =>
        claimDecision(claimed(), pod({ ip: '10.0.0.1' }), {
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
      claimDecision(claimed(annotations), pod({ ip: '10.0.0.1' }), SETTINGS).inputs;
    expect(decide({ [name]: 'one' })).not.toBe(base());
    expect(decide({ [name]: 'two' })).not.toBe(decide({ [name]: 'one' }));
  });

  it.each([
    ['an annotation delivery does not read', claimed({ 'agents.kruise.io/runtimes': 'agent-runtime' })],
    ['a label other than the claimed one', claimed({}, { labels: { 'agents.kruise.io/sandbox-pool': 'p' } })],
  ])('stays the same with %s', (_what, sandbox) => {
    expect(claimDecision(sandbox, pod({ ip: '10.0.0.1' }), SETTINGS).inputs).toBe(base());
  });
});
