import { describe, expect, it } from 'vitest';
import { claimDecision, markerOf, type DeliverySandbox } from '../../src/deliver/claim.js';
import { renderEnvFile } from '../../src/envfile/render-env-file.js';
import type { Pod } from '../../src/injection/index.js';

const SETTINGS = { runtimePort: 49983 };
const STATUS = 'agents.kruise.io/runtime-injection-status';

function sandbox(annotations: Record<string, string>, podIP?: unknown): DeliverySandbox {
  return {
    metadata: { name: 's', namespace: 'n', uid: 'su', annotations },
    status: podIP === undefined ? {} : { podInfo: { podIP } },
  };
}

function pod(wrapped: string[] = ['main']): Pod {
  return {
    metadata: {
      uid: 'pu',
      annotations: { [STATUS]: JSON.stringify({ injected: [], present: [], skipped: [], wrapped }) },
    },
    spec: { containers: [{ name: 'main' }] },
  };
}

const request = (envVars: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ envVars, ...extra });

describe('claimDecision', () => {
  it('skips an unclaimed Sandbox, a missing pod and a pod with nothing wrapped', () => {
    expect(claimDecision(sandbox({}, '10.0.0.1'), pod(), SETTINGS)).toEqual({ kind: 'skip', reason: 'unclaimed' });
    expect(
      claimDecision(
        sandbox({ 'agents.kruise.io/init-runtime-request': request({ A: '1' }) }, '10.0.0.1'),
        undefined,
        SETTINGS,
      ),
    ).toEqual({ kind: 'skip', reason: 'no-pod' });
    expect(
      claimDecision(
        sandbox({ 'agents.kruise.io/init-runtime-request': request({ A: '1' }) }, '10.0.0.1'),
        pod([]),
        SETTINGS,
      ),
    ).toEqual({ kind: 'skip', reason: 'not-wrapped' });
  });

  it('renders env.sh as env-file does, with the marker of that content', () => {
    const vars = { A: "it's", B: 'line\nbreak $HOME' };
    const decision = claimDecision(
      sandbox({ 'agents.kruise.io/init-runtime-request': request(vars, { accessToken: 'tok' }) }, '10.0.0.1'),
      pod(),
      SETTINGS,
    );
    expect(decision.kind).toBe('deliver');
    if (decision.kind !== 'deliver') return;
    expect(decision.target.content).toBe(renderEnvFile(vars));
    expect(decision.target.marker).toBe(markerOf(renderEnvFile(vars)));
    expect(decision.target).toMatchObject({
      podUid: 'pu',
      runtimeUrl: 'http://10.0.0.1:49983',
      accessToken: 'tok',
      variableCount: 2,
    });
  });

  it.each([
    [{ 'agents.kruise.io/runtime-url': 'http://rt.example:1234/' }, 'http://rt.example:1234'],
    [{ 'e2b.agents.kruise.io/envd-url': 'http://legacy:5' }, 'http://legacy:5'],
    [{ 'agents.kruise.io/runtime-url': 'http://a:1', 'e2b.agents.kruise.io/envd-url': 'http://b:2' }, 'http://a:1'],
  ])('finds the runtime as upstream does: %j', (annotations, url) => {
    const decision = claimDecision(
      sandbox({ 'agents.kruise.io/init-runtime-request': request({}), ...annotations }, 'fd00::1'),
      pod(),
      SETTINGS,
    );
    expect(decision.kind === 'deliver' && decision.target.runtimeUrl).toBe(url);
  });

  it('brackets an IPv6 pod IP, and prefers the token annotation over the request', () => {
    const decision = claimDecision(
      sandbox(
        {
          'agents.kruise.io/init-runtime-request': request({}, { accessToken: 'req' }),
          'agents.kruise.io/runtime-access-token': 'ann',
        },
        'fd00::1',
      ),
      pod(),
      SETTINGS,
    );
    expect(decision.kind === 'deliver' && decision.target).toMatchObject({
      runtimeUrl: 'http://[fd00::1]:49983',
      accessToken: 'ann',
    });
  });

  it.each([
    ['a bad name', request({ 'BAD-NAME': 'secret-value-1' }), {}, /invalid variable name "BAD-NAME"/],
    ['a non-string value', request({ A: 5 }), {}, /must be a string/],
    ['not JSON', '{"envVars": {"A": "secret-value-1"', {}, /not valid JSON/],
    ['an https URL', request({}), { 'agents.kruise.io/runtime-url': 'https://rt:1' }, /only http/],
    [
      'credentials in the URL',
      request({}),
      { 'agents.kruise.io/runtime-url': 'http://u:secret-value-1@rt:1' },
      /credentials/,
    ],
    ['not a URL', request({}), { 'agents.kruise.io/runtime-url': 'secret-value-1' }, /not a URL/],
  ])('refuses %s, naming no value', (_what, text, annotations, reason) => {
    const decision = claimDecision(
      sandbox({ 'agents.kruise.io/init-runtime-request': text, ...annotations }, '10.0.0.1'),
      pod(),
      SETTINGS,
    );
    expect(decision.kind).toBe('refused');
    if (decision.kind !== 'refused') return;
    expect(decision.reason).toMatch(reason);
    expect(decision.reason).not.toContain('secret-value-1');
  });

  it('refuses when there is no runtime address at all', () => {
    const decision = claimDecision(sandbox({ 'agents.kruise.io/init-runtime-request': request({}) }), pod(), SETTINGS);
    expect(decision).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/no runtime URL/) as unknown });
  });
});
