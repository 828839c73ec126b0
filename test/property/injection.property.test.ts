import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  injectRuntimes,
  type EnvVarsInjectionPolicy,
  type Pod,
  type PostStartConflict,
  type RuntimeConfig,
} from '../../src/injection/index.js';
import { freezeAll } from '../support/freeze-all.js';
import { propertyRuns, propertyTimeout } from '../support/property-runs.js';
import { applyStrict } from '../support/strict-patch.js';
import {
  configsArbitrary,
  podArbitrary,
  policyArbitrary,
  postStartConflictArbitrary,
  runtimesArbitrary,
} from './arbitraries.js';
import { diffPods } from './pod-diff.js';

const RUNS = propertyRuns(10_000);

function run(
  pod: Pod,
  configs: Map<string, RuntimeConfig>,
  runtimes: string[],
  policy: EnvVarsInjectionPolicy,
  postStartConflict: PostStartConflict = 'skip',
) {
  return injectRuntimes(pod, {
    runtimes: runtimes.map((name) => ({ name, config: configs.get(name) ?? {} })),
    policy,
    allConfigs: configs,
    postStartConflict,
  });
}

function decodePointer(path: string): string[] {
  return path
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

describe('injection properties', () => {
  it(
    `for ${RUNS} generated pods and configs: the patch applies strictly, reproduces the pod, and is stable`,
    () => {
      fc.assert(
        fc.property(
          podArbitrary,
          configsArbitrary,
          runtimesArbitrary,
          policyArbitrary,
          postStartConflictArbitrary,
          (pod, configs, runtimes, policy, postStart) => {
            const before = structuredClone(pod);
            // Frozen, arrays too (the store leaves arrays extensible): an edit that writes into a config value throws here.
            for (const config of configs.values()) freezeAll(config);
            const result = run(pod, configs, runtimes, policy, postStart);
            expect(pod).toEqual(before);

            const operations = result.operations;
            expect(operations.length > 0).toBe(result.changed);
            // The recorded patch, applied as strictly as kube-apiserver applies it, gives the edited pod, and so
            // does the oracle: the diff of the input and the edited pod.
            expect(applyStrict(pod, operations)).toEqual(result.pod);
            expect(applyStrict(pod, diffPods(pod, result.pod))).toEqual(result.pod);
            expect(diffPods(pod, result.pod).length > 0).toBe(result.changed);
            for (const op of operations) {
              expect(['/spec', '/metadata', '']).not.toContain(op.path);
              const tokens = decodePointer(op.path);
              // Every key a path names exists (or is being created) under that exact, unescaped name.
              if (
                tokens[0] === 'metadata' &&
                (tokens[1] === 'labels' || tokens[1] === 'annotations') &&
                tokens.length === 3
              ) {
                const key = tokens[2] ?? '';
                expect(Object.keys(result.pod.metadata[tokens[1]] ?? {})).toContain(key);
              }
            }

            // Auto: envd writes the environment from the main container, so where anything waits for it, the main
            // container has the volume; where the main container holds /var/sandbox with another volume, nothing waits.
            const mainMounts = (container: Pod['spec']['containers'][number] | undefined) =>
              container?.volumeMounts ?? [];
            if (
              mainMounts(pod.spec.containers[0]).some((m) => m.mountPath === '/var/sandbox' && m.name !== 'sandbox-env')
            ) {
              expect(result.report.wrapped).toEqual([]);
            }
            if (result.report.wrapped.length > 0) {
              expect(mainMounts(result.pod.spec.containers[0]).some((m) => m.name === 'sandbox-env')).toBe(true);
            }

            // Reinvocation: the admitted pod, admitted again, needs no patch.
            const again = run(result.pod, configs, runtimes, policy, postStart);
            expect(again.changed).toBe(false);
            expect(again.operations).toEqual([]);
            expect(diffPods(result.pod, again.pod)).toEqual([]);
          },
        ),
        { numRuns: RUNS },
      );
    },
    propertyTimeout(RUNS),
  );

  it('escapes `/` and `~` in annotation and label keys', () => {
    const pod: Pod = { metadata: { annotations: { 'a/b': '1' } }, spec: { containers: [{ name: 'main' }] } };
    const configs = new Map<string, RuntimeConfig>([['g', { labels: { 'x~y/z': 'v' }, annotations: { 'p/q~': 'w' } }]]);
    const result = run(pod, configs, ['g'], 'None');
    const paths = result.operations.map((o) => o.path);
    expect(paths).toContain('/metadata/annotations/p~1q~0');
    // The pod had no labels: the map is created, then the entry added under its unescaped name.
    expect(result.operations.filter((o) => o.path.startsWith('/metadata/labels'))).toEqual([
      { op: 'add', path: '/metadata/labels', value: {} },
      { op: 'add', path: '/metadata/labels/x~0y~1z', value: 'v' },
    ]);
    expect(applyStrict(pod, result.operations).metadata.labels).toEqual({ 'x~y/z': 'v' });
  });
});
