/**
 * What Auto cannot hold until the claim, through the built CLI: `inject` prints it on stderr, `review` answers
 * it as warnings with --warn-unwrapped (and not without, as the spec's cases expect), `explain` shows it whole.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as say from '../../src/injection/auto-warnings.js';
import { limitWarnings } from '../../src/admission/warnings.js';
import { runCli } from '../support/cli.js';
import { reviewFor } from '../support/conformance.js';

const CONFIG = new URL('../../manifests/components/injection-config/injection-config.yaml', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'si-auto-advice-'));

const HANDLERS: Record<say.NetworkProbeHandler, Record<string, unknown>> = {
  httpGet: { httpGet: { path: '/healthz', port: 8080 } },
  tcpSocket: { tcpSocket: { port: 8080 } },
  grpc: { grpc: { port: 9000 } },
};
const PROBES = ['startupProbe', 'livenessProbe', 'readinessProbe'] as const;

function autoPod(container: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      annotations: {
        'agents.kruise.io/runtimes': 'agent-runtime',
        'agents.kruise.io/env-vars-injection-policy': 'Auto',
      },
    },
    spec: { containers: [{ name: 'app', image: 'python:3.12', command: ['python', 'app.py'], ...container }] },
  };
}

function file(name: string, content: unknown): string {
  const path = join(work, name);
  writeFileSync(path, JSON.stringify(content));
  return path;
}

describe('a wrapped container with a network probe, through the CLI', () => {
  for (const probe of PROBES) {
    for (const handler of say.NETWORK_PROBE_HANDLERS) {
      const text = say.networkProbeWarning('app', probe, handler);
      const pod = autoPod({ [probe]: HANDLERS[handler] });

      it(`inject says it for ${handler} ${probe}, and the pod printed is the one without the word`, async () => {
        const run = await runCli(['inject', '--config-file', CONFIG, '-o', 'json'], JSON.stringify(pod));
        expect(run.code).toBe(0);
        expect(run.stderr.split('\n')).toContain(`warning: pod default/p: ${text}`);
        const out = JSON.parse(run.stdout) as { spec: { containers: Record<string, unknown>[] } };
        expect(out.spec.containers[0]?.[probe]).toEqual(HANDLERS[handler]);
      });

      it(`review answers it for ${handler} ${probe} only with --warn-unwrapped`, async () => {
        const path = file(`${probe}-${handler}.review.json`, reviewFor(pod, 'u-1'));
        const answer = async (flags: string[]) => {
          const run = await runCli(['review', '--config-file', CONFIG, '-f', path, ...flags]);
          expect(run.code).toBe(0);
          return (JSON.parse(run.stdout) as { response: { warnings?: string[]; patch: string } }).response;
        };
        const warned = await answer(['--warn-unwrapped']);
        const plain = await answer([]);
        expect(warned.warnings).toEqual(limitWarnings([`pod default/p: ${text}`]));
        expect(warned.warnings?.[0]).toMatch(/^pod default\/p: Auto: (not Ready|restarted) until claimed/);
        expect(plain.warnings).toBeUndefined();
        expect(warned.patch).toBe(plain.patch);
      });
    }
  }

  it('explain shows every one whole, each network probe of the container', async () => {
    const pod = autoPod({
      startupProbe: HANDLERS.tcpSocket,
      livenessProbe: HANDLERS.grpc,
      readinessProbe: HANDLERS.httpGet,
    });
    const path = file('explain-pod.json', pod);
    const run = await runCli(['explain', '--config-file', CONFIG, '-f', path, '-o', 'json']);
    expect(run.code).toBe(0);
    const explanation = JSON.parse(run.stdout) as { advice: string[]; warnings: string[]; notes: string[] };
    expect(explanation.advice).toEqual([
      `pod default/p: ${say.restartingProbeWarning('app', 'startupProbe', 'tcpSocket')}`,
      `pod default/p: ${say.restartingProbeWarning('app', 'livenessProbe', 'grpc')}`,
      `pod default/p: ${say.readinessProbeWarning('app', 'httpGet')}`,
    ]);
    expect(explanation.notes).toContain(say.noWrapperImageNote());
    const text = await runCli(['explain', '--config-file', CONFIG, '-f', path]);
    expect(text.stdout).toContain(`  pod default/p: ${say.readinessProbeWarning('app', 'httpGet')}\n`);
  });

  it('inject says when no wrapper image is set, and not when one is', async () => {
    const pod = JSON.stringify(autoPod({}));
    const without = await runCli(['inject', '--config-file', CONFIG], pod);
    expect(without.stderr.split('\n')).toContain(`note: ${say.noWrapperImageNote()}`);
    const withImage = await runCli(['inject', '--config-file', CONFIG, '--wrapper-image', 'injector:1'], pod);
    expect(withImage.code).toBe(0);
    expect(withImage.stderr).not.toContain('no --wrapper-image');
  });

  it('inject names a container without command', async () => {
    const pod = autoPod({});
    (pod.spec as { containers: unknown[] }).containers.push({ name: 'side', image: 's:1' });
    const run = await runCli(['inject', '--config-file', CONFIG], JSON.stringify(pod));
    expect(run.stderr.split('\n')).toContain(`warning: pod default/p: ${say.noCommandWarning('side')}`);
  });
});
