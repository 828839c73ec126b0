import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../../src/kube-shapes/admission-review.js';
import type { Pod } from '../../src/injection/index.js';
import {
  keepWebhookFields,
  runtimesFromOwner,
  type Sandbox,
  type SandboxLookup,
} from '../../src/admission/sandbox-runtimes.js';

const request: AdmissionRequest = {
  uid: 'u',
  kind: { group: '', version: 'v1', kind: 'Pod' },
  operation: 'CREATE',
  namespace: 'team-a',
};
const owner = { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: 'sbx', uid: 'uid-1', controller: true };
const annotated = { 'agents.kruise.io/runtimes': 'csi' };

function pod(
  ownerReferences: Pod['metadata']['ownerReferences'],
  annotations: Record<string, string> = annotated,
): Pod {
  return { metadata: { generateName: 'sbx-', annotations, ownerReferences }, spec: { containers: [{ name: 'main' }] } };
}

/** Answers with the Sandbox as the cache stores it (keepWebhookFields): a field read here and cut there fails. */
function lookupOf(sandbox: Sandbox | undefined): SandboxLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = (namespace: string, name: string, uid: string): Promise<Sandbox | undefined> => {
    calls.push(`${namespace}/${name}/${uid}`);
    return Promise.resolve(sandbox === undefined ? undefined : keepWebhookFields(sandbox));
  };
  return Object.assign(lookup, { calls });
}

const sandbox = (spec: Sandbox['spec']): Sandbox => ({
  metadata: { name: 'sbx', namespace: 'team-a', uid: 'uid-1' },
  spec,
});

describe('runtimes from the owning Sandbox', () => {
  it('reads spec.runtimes[].name and spec.envVarsInjectionPolicy of the controller owner', async () => {
    const lookup = lookupOf(
      sandbox({
        runtimes: [{ name: 'agent-runtime' }, { name: 'csi' }, { name: 'csi' }],
        envVarsInjectionPolicy: 'Auto',
      }),
    );
    const selection = await runtimesFromOwner(pod([owner]), request, lookup, false);
    expect(selection).toEqual({
      ok: true,
      runtimes: ['agent-runtime', 'csi'],
      policy: 'Auto',
      source: 'Sandbox team-a/sbx: spec.runtimes',
      policySource: 'Sandbox team-a/sbx: spec.envVarsInjectionPolicy',
    });
    expect(lookup.calls).toEqual(['team-a/sbx/uid-1']);
  });

  it('ignores the pod annotations when the pod has a Sandbox owner', async () => {
    const selection = await runtimesFromOwner(pod([owner]), request, lookupOf(sandbox({})), true);
    expect(selection).toMatchObject({ ok: true, runtimes: [], policy: 'None' });
  });

  it('honours annotations on pods without an owner only when allowed', async () => {
    expect(await runtimesFromOwner(pod(undefined), request, lookupOf(undefined), false)).toMatchObject({
      ok: true,
      runtimes: [],
    });
    expect(await runtimesFromOwner(pod(undefined), request, lookupOf(undefined), true)).toMatchObject({
      ok: true,
      runtimes: ['csi'],
    });
  });

  it('does not take a non-controller or foreign owner for the Sandbox', async () => {
    const refs = [
      { ...owner, controller: false },
      { ...owner, apiVersion: 'agents.kruise.io/v2' },
    ];
    const lookup = lookupOf(sandbox({ runtimes: [{ name: 'csi' }] }));
    expect(await runtimesFromOwner(pod(refs), request, lookup, false)).toMatchObject({ runtimes: [] });
    expect(lookup.calls).toEqual([]);
  });

  it('denies a pod whose owning Sandbox cannot be found, naming it', async () => {
    const selection = await runtimesFromOwner(pod([owner]), request, lookupOf(undefined), false);
    expect(selection).toEqual({
      ok: false,
      denial: { code: 'SI_SANDBOX_NOT_FOUND', status: 404, message: 'owner Sandbox team-a/sbx (uid uid-1) not found' },
    });
  });

  it('denies when the lookup fails, naming the Sandbox', async () => {
    const failing: SandboxLookup = () => Promise.reject(new Error('connection refused'));
    expect(await runtimesFromOwner(pod([owner]), request, failing, false)).toEqual({
      ok: false,
      denial: {
        code: 'SI_SANDBOX_LOOKUP_FAILED',
        status: 500,
        message: 'cannot look up owner Sandbox team-a/sbx: connection refused',
      },
    });
  });

  it.each([
    [{ runtimes: 'csi' }, 'SI_SANDBOX_SPEC_INVALID', 'Sandbox team-a/sbx: spec.runtimes must be a list'],
    [
      { runtimes: [{ name: '' }] },
      'SI_SANDBOX_SPEC_INVALID',
      'Sandbox team-a/sbx: spec.runtimes[0].name must be a non-empty string',
    ],
    [
      { envVarsInjectionPolicy: 'Always' },
      'SI_POLICY_INVALID',
      'Sandbox team-a/sbx: spec.envVarsInjectionPolicy: "Always" is not a valid EnvVarsInjectionPolicy (allowed: None, Auto)',
    ],
  ])('denies a Sandbox with a bad spec (%j)', async (spec, code, message) => {
    expect(await runtimesFromOwner(pod([owner]), request, lookupOf(sandbox(spec)), false)).toEqual({
      ok: false,
      denial: { code, status: 400, message },
    });
  });

  describe('the policy', () => {
    const POLICY = 'agents.kruise.io/env-vars-injection-policy';
    const box = (spec: Sandbox['spec'], annotations?: Record<string, string>): Sandbox => ({
      metadata: {
        name: 'sbx',
        namespace: 'team-a',
        uid: 'uid-1',
        ...(annotations === undefined ? {} : { annotations }),
      },
      spec,
    });
    const select = (sandbox: Sandbox, podAnnotations: Record<string, string> = {}) =>
      runtimesFromOwner(pod([owner], podAnnotations), request, lookupOf(sandbox), false);

    it("comes from the Sandbox annotation when the spec has none (today's CRD prunes the field)", async () => {
      expect(await select(box({ runtimes: [{ name: 'agent-runtime' }] }, { [POLICY]: 'Auto' }))).toMatchObject({
        ok: true,
        policy: 'Auto',
        policySource: `Sandbox team-a/sbx: annotation ${POLICY}`,
      });
    });

    it("comes from the pod annotation the controller copies from the template, after the Sandbox's", async () => {
      expect(await select(box({}), { [POLICY]: 'Auto' })).toMatchObject({
        ok: true,
        policy: 'Auto',
        policySource: `pod annotation ${POLICY}`,
      });
      expect(await select(box({}, { [POLICY]: 'None' }), { [POLICY]: 'Auto' })).toMatchObject({
        ok: true,
        policy: 'None',
        policySource: `Sandbox team-a/sbx: annotation ${POLICY}`,
      });
      expect(
        await select(box({ envVarsInjectionPolicy: 'Auto' }, { [POLICY]: 'None' }), { [POLICY]: 'None' }),
      ).toMatchObject({
        policy: 'Auto',
        policySource: 'Sandbox team-a/sbx: spec.envVarsInjectionPolicy',
      });
    });

    it('is None when no source sets it, and an empty value counts as unset', async () => {
      const selection = await select(box({}, { [POLICY]: '' }), { [POLICY]: '' });
      expect(selection).toMatchObject({ ok: true, policy: 'None' });
      expect(selection.ok && selection.policySource).toBeUndefined();
    });

    it('denies a bad value in any source, naming it, even when a source before it is set', async () => {
      expect(await select(box({}, { [POLICY]: 'always' }))).toEqual({
        ok: false,
        denial: {
          code: 'SI_POLICY_INVALID',
          status: 400,
          message: `Sandbox team-a/sbx: annotation ${POLICY}: "always" is not a valid EnvVarsInjectionPolicy (allowed: None, Auto)`,
        },
      });
      expect(await select(box({ envVarsInjectionPolicy: 'Auto' }), { [POLICY]: 'yes' })).toMatchObject({
        ok: false,
        denial: {
          message: expect.stringMatching(
            /^pod annotation agents\.kruise\.io\/env-vars-injection-policy: "yes"/,
          ) as unknown,
        },
      });
    });

    it('never takes runtimes from the pod, only the policy', async () => {
      expect(await select(box({}), { 'agents.kruise.io/runtimes': 'csi', [POLICY]: 'Auto' })).toMatchObject({
        runtimes: [],
        policy: 'Auto',
      });
    });
  });
});
