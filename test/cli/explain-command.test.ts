// `sandbox-injector explain` offline, through the built CLI on fixture files. The cluster side is proven against
// a real kube-apiserver in test/e2e/explain.e2e.test.ts.
import { readFileSync } from 'node:fs';
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { Explanation } from '../../src/cli/explain/explanation.js';
import type { Pod } from '../../src/injection/index.js';
import { runCli } from '../support/cli.js';

const CONFIG = new URL('../../manifests/components/injection-config/injection-config.yaml', import.meta.url).pathname;
const fixture = (name: string): string => new URL(`fixtures/explain/${name}`, import.meta.url).pathname;

const cli = runCli;

async function explainJson(args: string[]): Promise<Explanation> {
  const run = await cli(['explain', ...args, '-o', 'json']);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as Explanation;
}

describe('sandbox-injector explain, offline', () => {
  it('prints every section for a person, saying the selectors could not be checked offline', async () => {
    const run = await cli(['explain', '--config-file', CONFIG, '-f', fixture('sandbox-pod.yaml')]);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe(`Pod team-a/sbx-1 (file ${fixture('sandbox-pod.yaml')})`);
    expect(lines).toContain(
      'Webhook selection: not checked offline (no --kubeconfig: the webhook configuration and the namespace labels are unknown)',
    );
    expect(lines).toContain('  runtimes: agent-runtime, csi  from annotation agents.kruise.io/runtimes');
    expect(lines).toContain('  policy:   Auto  from annotation agents.kruise.io/env-vars-injection-policy');
    expect(lines).toContain('Config (ConfigMap sandbox-system/sandbox-injection-config)');
    expect(lines).toContain('  key agent-runtime: valid');
    expect(lines).toContain('Result: injected');
    expect(lines).toContain('  csi: injected');
    expect(lines).toContain('  wrapped for Auto: main');
    expect(lines).toContain('+++ pod team-a/sbx-1 as admitted');
  });

  it('answers with the patch `inject` applies: one review path', async () => {
    const explanation = await explainJson(['--config-file', CONFIG, '-f', fixture('sandbox-pod.yaml')]);
    const injected = await cli(['inject', '--config-file', CONFIG, '-f', fixture('sandbox-pod.yaml')]);
    expect(injected.code).toBe(0);
    const original = parse(readFileSync(fixture('sandbox-pod.yaml'), 'utf8')) as Pod;
    const patched = fastJsonPatch.applyPatch(original, explanation.patch, true, false).newDocument;
    expect(patched).toEqual(parse(injected.stdout));
    expect(explanation).toMatchObject({
      pod: 'team-a/sbx-1',
      webhook: { state: 'offline' },
      selection: { runtimes: ['agent-runtime', 'csi'], policy: 'Auto' },
      decision: 'injected',
      runtimes: [
        { runtime: 'agent-runtime', fate: 'injected', earlier: false },
        { runtime: 'csi', fate: 'injected', earlier: false },
      ],
    });
  });

  it('names a skipped runtime with its reason', async () => {
    const explanation = await explainJson(['--config-file', CONFIG, '-f', fixture('conflict-pod.yaml')]);
    expect(explanation.runtimes).toEqual([
      {
        runtime: 'agent-runtime',
        fate: 'skipped',
        reason: 'container-name-conflict',
        message: expect.stringContaining('agent-runtime') as unknown,
        earlier: false,
      },
      { runtime: 'csi', fate: 'injected', earlier: false },
    ]);
    const text = await cli(['explain', '--config-file', CONFIG, '-f', fixture('conflict-pod.yaml')]);
    expect(text.stdout).toMatch(/^ {2}agent-runtime: skipped, container-name-conflict: /m);
  });

  it('reads several --config-file as successive versions: a key bad in the last keeps its last valid version', async () => {
    const replayed = await cli([
      'explain',
      '--config-file',
      CONFIG,
      '--config-file',
      fixture('config-broken-agent-runtime.yaml'),
      '-f',
      fixture('sandbox-pod.yaml'),
      '-o',
      'json',
    ]);
    const explanation = JSON.parse(replayed.stdout) as Explanation;
    expect(explanation.configMap.keys.map(({ key, state }) => ({ key, state }))).toEqual([
      { key: 'agent-runtime', state: 'last-valid' },
      { key: 'csi', state: 'valid' },
    ]);
    expect(explanation.decision).toBe('injected');
    expect(replayed.stderr).toContain('key "agent-runtime" is invalid');

    const alone = JSON.parse(
      (
        await cli([
          'explain',
          '--config-file',
          fixture('config-broken-agent-runtime.yaml'),
          '-f',
          fixture('sandbox-pod.yaml'),
          '-o',
          'json',
        ])
      ).stdout,
    ) as Explanation;
    expect(alone.configMap.keys[0]).toMatchObject({ key: 'agent-runtime', state: 'invalid' });
    expect(alone.denial).toMatchObject({ code: 'SI_RUNTIME_CONFIG_UNUSABLE' });
  });

  it('says a denied pod is denied, not admitted, where it shows the patch', async () => {
    const run = await cli([
      'explain',
      '--config-file',
      fixture('config-broken-agent-runtime.yaml'),
      '-f',
      fixture('sandbox-pod.yaml'),
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Result: denied, SI_RUNTIME_CONFIG_UNUSABLE \(500\): /m);
    expect(run.stdout).toMatch(/^Patch: none, the pod is denied/m);
    expect(run.stdout).not.toContain('admitted');
  });

  it('without --config-file explains as if the ConfigMap does not exist', async () => {
    const explanation = await explainJson(['-f', fixture('sandbox-pod.yaml')]);
    expect(explanation.configMap.exists).toBe(false);
    expect(explanation.patch).toEqual([]);
    expect(explanation.runtimes.every((r) => r.fate === 'none')).toBe(true);
  });

  it.each([
    ['no pod to explain', [], 2, /give exactly one of --sandbox, --pod, -f/],
    ['two pods to explain', ['--pod', 'a/b', '-f', 'x.yaml'], 2, /give exactly one of/],
    ['--pod without --kubeconfig', ['--pod', 'team-a/p'], 2, /--pod needs --kubeconfig/],
    ['--sandbox without --kubeconfig', ['--sandbox', 'team-a/s'], 2, /--sandbox needs --kubeconfig/],
    [
      'two cluster-only flags without --kubeconfig',
      ['--sandbox', 'team-a/s', '--config-name', 'c'],
      2,
      /--sandbox, --config-name need --kubeconfig/,
    ],
    [
      '--config-file with --kubeconfig',
      ['--kubeconfig', 'k', '--config-file', 'c', '-f', 'p.yaml'],
      2,
      /--config-file is for offline use/,
    ],
    ['an unknown output', ['-f', 'p.yaml', '-o', 'yaml'], 2, /--output: "yaml" is not one of text, json/],
    ['a file that is not a pod', ['-f', CONFIG], 1, /not a Pod manifest/],
  ])('refuses %s', async (_name, args, code, message) => {
    const run = await cli(['explain', ...args]);
    expect(run.code).toBe(code);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
  });
});
