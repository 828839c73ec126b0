import { describe, expect, it } from 'vitest';
import * as say from '../../src/injection/auto-warnings.js';
import { limitWarnings, MAX_WARNING_LENGTH } from '../../src/admission/warnings.js';
import type { Container, Probe } from '../../src/injection/index.js';
import { inject, pod } from '../support/builders.js';

const PROBES = ['startupProbe', 'livenessProbe', 'readinessProbe'] as const;
const HANDLERS: Record<say.NetworkProbeHandler, Probe> = {
  httpGet: { httpGet: { path: '/healthz', port: 8080 } },
  tcpSocket: { tcpSocket: { port: 8080 } },
  grpc: { grpc: { port: 9000 } },
};
/** The subject the webhook puts before each warning, for a Sandbox with a name of ordinary length. */
const SUBJECT = 'Sandbox team-a/sbx-7: ';

describe('the texts of what Auto cannot hold until the claim', () => {
  it('a network readiness probe: never Ready, so the pool never fills; use an exec probe', () => {
    for (const handler of say.NETWORK_PROBE_HANDLERS) {
      const text = say.networkProbeWarning('app', 'readinessProbe', handler);
      expect(text).toBe(
        `Auto: not Ready until claimed, pool never fills: "app" readinessProbe ${handler}; use an exec probe`,
      );
      expect(text).toBe(say.readinessProbeWarning('app', handler));
    }
  });

  it('a network liveness or startup probe: restarted until claimed; use an exec probe', () => {
    for (const probe of ['livenessProbe', 'startupProbe'] as const) {
      for (const handler of say.NETWORK_PROBE_HANDLERS) {
        const text = say.networkProbeWarning('app', probe, handler);
        expect(text).toBe(
          `Auto: restarted until claimed: "app" ${probe} ${handler} fails meanwhile; use an exec probe`,
        );
        expect(text).toBe(say.restartingProbeWarning('app', probe, handler));
      }
    }
  });

  it('a probe that traffic-proxy sends through its proxy says so where the handler would be', () => {
    expect(say.networkProbeWarning('app', 'readinessProbe', say.VIA_PROXY)).toBe(
      'Auto: not Ready until claimed, pool never fills: "app" readinessProbe via proxy; use an exec probe',
    );
    expect(say.networkProbeWarning('app', 'livenessProbe', say.VIA_PROXY)).toBe(
      'Auto: restarted until claimed: "app" livenessProbe via proxy fails meanwhile; use an exec probe',
    );
  });

  it('a container without command starts unclaimed', () => {
    expect(say.noCommandWarning('worker')).toBe(
      `Auto: starts unclaimed, without the claim's env: "worker" has no command to wrap; give it one`,
    );
  });

  it('every text fits in 120 characters after the subject, and a cut keeps the reason', () => {
    const texts = [
      ...PROBES.flatMap((probe) => say.NETWORK_PROBE_HANDLERS.map((h) => say.networkProbeWarning('app', probe, h))),
      ...PROBES.map((probe) => say.networkProbeWarning('app', probe, say.VIA_PROXY)),
      say.noCommandWarning('app'),
      say.noAgentRuntimeWarning(),
      say.mainMountBlocksWarning('app', 'data'),
      say.containerMountBlocksWarning('app', 'data'),
      say.sidecarMountKeptWarning('agent-runtime'),
    ];
    for (const text of texts) expect(`${SUBJECT}${text}`.length, text).toBeLessThanOrEqual(MAX_WARNING_LENGTH);
    // A container name at Kubernetes' 63-character limit pushes the line past 120: what is cut is the end.
    const long = 'c'.repeat(63);
    const [cut] = limitWarnings([`${SUBJECT}${say.readinessProbeWarning(long, 'httpGet')}`]);
    expect(cut).toHaveLength(MAX_WARNING_LENGTH);
    expect(cut).toContain('not Ready until claimed, pool never fills');
  });
});

describe('Auto says what it cannot hold, and changes nothing for it', () => {
  const app = (extra: Partial<Container>): Container => ({ name: 'app', image: 'app:1', command: ['run'], ...extra });

  for (const probe of PROBES) {
    for (const handler of say.NETWORK_PROBE_HANDLERS) {
      it(`a wrapped container's ${handler} ${probe}`, () => {
        const withProbe = pod([app({ [probe]: HANDLERS[handler] })]);
        const plain = pod([app({})]);
        const result = inject(withProbe, ['agent-runtime'], 'Auto');
        expect(result.report.advice).toEqual([say.networkProbeWarning('app', probe, handler)]);
        expect(result.report.warnings).toEqual([]);
        expect(result.report.wrapped).toEqual(['app']);
        // The probe stays as it was, and the patch and the status are those of the same pod without it.
        expect(result.pod.spec.containers[0]?.[probe]).toEqual(HANDLERS[handler]);
        const without = inject(plain, ['agent-runtime'], 'Auto');
        expect(result.operations).toEqual(without.operations);
      });
    }
  }

  it('an exec probe is wrapped and needs no word', () => {
    const result = inject(pod([app({ readinessProbe: { exec: { command: ['ready'] } } })]), ['agent-runtime'], 'Auto');
    expect(result.report.advice).toEqual([]);
  });

  it('a container without command, the main one too, is named', () => {
    const result = inject(
      pod([{ name: 'main', image: 'm:1' }, app({}), { name: 'side', image: 's:1' }]),
      ['agent-runtime'],
      'Auto',
    );
    expect(result.report.advice).toEqual([say.noCommandWarning('main'), say.noCommandWarning('side')]);
    expect(result.report.warnings).toEqual([]);
  });

  it('a container that is not wrapped for another reason gets no probe advice', () => {
    const blocked = app({
      readinessProbe: HANDLERS.httpGet,
      volumeMounts: [{ name: 'data', mountPath: '/var/sandbox' }],
    });
    const result = inject(pod([{ name: 'main', image: 'm:1', command: ['m'] }, blocked]), ['agent-runtime'], 'Auto');
    expect(result.report.advice).toEqual([]);
    expect(result.report.warnings).toEqual([say.containerMountBlocksWarning('app', 'data')]);
  });

  it('policy None says nothing', () => {
    const result = inject(pod([app({ readinessProbe: HANDLERS.httpGet })]), ['agent-runtime'], 'None');
    expect(result.report.advice).toEqual([]);
  });
});
