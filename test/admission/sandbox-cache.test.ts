/**
 * The webhook's Sandbox cache keeps only what the webhook reads. A Sandbox with a claim (its request annotation,
 * its access tokens) and a status is stored, listed or watched, and fetched on a miss, without them; the runtimes
 * and the policy read from the cut object are those of the whole one, for the cases below and for arbitrary
 * Sandboxes, so a field the webhook reads and the list leaves out fails here. Over client-node's real ListWatch,
 * with a scripted watch and lists the test gives.
 */
import { CoreV1Api, CustomObjectsApi, type KubernetesListObject } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/injection/index.js';
import type { AdmissionRequest } from '../../src/kube-shapes/admission-review.js';
import type { KubeClients } from '../../src/kube-client/clients.js';
import {
  keepWebhookFields,
  runtimesFromOwner,
  watchSandboxes,
  type Sandbox,
} from '../../src/admission/sandbox-runtimes.js';
import { ManualClock } from '../support/manual-clock.js';
import { propertyRuns, propertyTimeout } from '../support/property-runs.js';
import { ScriptedWatch, unreachableKubeConfig } from '../support/scripted-watch.js';

const POLICY = 'agents.kruise.io/env-vars-injection-policy';
const REQUEST = 'agents.kruise.io/init-runtime-request';
const TOKEN = 'agents.kruise.io/runtime-access-token';
const LEGACY_TOKEN = 'e2b.agents.kruise.io/envd-access-token';
const SANDBOXES_PATH = '/apis/agents.kruise.io/v1alpha1/sandboxes';

/** A claimed Sandbox as the API serves it: the tenant's request and tokens, status, and what any object carries. */
function claimedSandbox(name = 'sbx', uid = `${name}-uid`, resourceVersion = '12'): Sandbox {
  return {
    apiVersion: 'agents.kruise.io/v1alpha1',
    kind: 'Sandbox',
    metadata: {
      name,
      namespace: 'team-a',
      uid,
      resourceVersion,
      generation: 3,
      creationTimestamp: new Date('2026-01-01T00:00:00Z'),
      managedFields: [{ manager: 'sandbox-manager', operation: 'Update', fieldsV1: { 'f:metadata': {} } }],
      labels: { 'agents.kruise.io/sandbox-claimed': 'true', team: 'a' },
      annotations: {
        [POLICY]: 'Auto',
        [REQUEST]: JSON.stringify({ envVars: { OPENAI_API_KEY: 'sk-tenant-a' }, accessToken: 'secret-a' }),
        [TOKEN]: 'secret-a',
        [LEGACY_TOKEN]: 'secret-a',
        'agents.kruise.io/runtime-url': 'http://10.0.0.9:49983',
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
      },
    },
    spec: {
      runtimes: [{ name: 'agent-runtime' }, { name: 'csi' }],
      envVarsInjectionPolicy: 'Auto',
      template: { spec: { containers: [{ name: 'main', image: 'app:1' }] } },
    } as Sandbox['spec'],
    status: { phase: 'Running', podInfo: { podIP: '10.0.0.9', podUID: 'pod-uid' } },
  } as Sandbox;
}

/** What the cache must hold of claimedSandbox(): identity, the runtimes and the policy's two Sandbox sources. */
const CUT = {
  metadata: {
    name: 'sbx',
    namespace: 'team-a',
    uid: 'sbx-uid',
    resourceVersion: '12',
    annotations: { [POLICY]: 'Auto' },
  },
  spec: { runtimes: [{ name: 'agent-runtime' }, { name: 'csi' }], envVarsInjectionPolicy: 'Auto' },
};

const request: AdmissionRequest = {
  uid: 'u',
  kind: { group: '', version: 'v1', kind: 'Pod' },
  operation: 'CREATE',
  namespace: 'team-a',
};

function ownedPod(name: string, uid: string, annotations: Record<string, string> = {}): Pod {
  const owner = { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name, uid, controller: true };
  return {
    metadata: { generateName: `${name}-`, annotations, ownerReferences: [owner] },
    spec: { containers: [{ name: 'main' }] },
  };
}

const selection = (sandbox: Sandbox, pod = ownedPod('sbx', 'sbx-uid')) =>
  runtimesFromOwner(pod, request, () => Promise.resolve(sandbox), false);

/** watchSandboxes over a list the test sets, a watch it scripts and a GET it answers; `gets` counts the GETs. */
function sandboxCache(lists: { sandboxes: Sandbox[]; fetched?: Sandbox }) {
  const config = unreachableKubeConfig();
  const custom = config.makeApiClient(CustomObjectsApi);
  custom.listClusterCustomObject = (): Promise<KubernetesListObject<Sandbox>> =>
    Promise.resolve({ metadata: { resourceVersion: '10' }, items: structuredClone(lists.sandboxes) });
  let gets = 0;
  custom.getNamespacedCustomObject = (): Promise<Sandbox> => {
    gets += 1;
    if (lists.fetched === undefined) return Promise.reject(Object.assign(new Error('not found'), { code: 404 }));
    return Promise.resolve(structuredClone(lists.fetched));
  };
  const watch = new ScriptedWatch();
  const clients: KubeClients = {
    kubeConfig: config,
    core: config.makeApiClient(CoreV1Api),
    custom,
    watch,
    api: () => {
      throw new Error('the Sandbox cache uses no other API');
    },
  };
  const started = watch.nextRequest(SANDBOXES_PATH);
  const cache = watchSandboxes(clients, { clock: new ManualClock() });
  return { ...cache, started, gets: () => gets };
}

describe('keepWebhookFields', () => {
  it('keeps identity, spec.runtimes, spec.envVarsInjectionPolicy and the policy annotation, nothing else', () => {
    const whole = claimedSandbox();
    const cut = keepWebhookFields(whole);
    expect(cut).toEqual(CUT);
    expect(JSON.stringify(cut)).not.toContain('secret-a');
    expect(JSON.stringify(cut)).not.toContain('sk-tenant-a');
    expect(cut).not.toHaveProperty('status');
    // The object it reads is left as it was.
    expect(whole.metadata?.annotations?.[REQUEST]).toContain('sk-tenant-a');
  });

  it('gives the selection what the whole Sandbox gives it, for each source of the policy', async () => {
    const whole = claimedSandbox();
    expect(await selection(keepWebhookFields(whole))).toEqual(await selection(whole));
    expect(await selection(keepWebhookFields(whole))).toMatchObject({
      ok: true,
      runtimes: ['agent-runtime', 'csi'],
      policy: 'Auto',
    });
    const annotationOnly = claimedSandbox();
    delete (annotationOnly.spec as { envVarsInjectionPolicy?: unknown }).envVarsInjectionPolicy;
    expect(await selection(keepWebhookFields(annotationOnly))).toEqual(await selection(annotationOnly));
    expect(await selection(keepWebhookFields(annotationOnly))).toMatchObject({
      policySource: `Sandbox team-a/sbx: annotation ${POLICY}`,
    });
  });

  it('keeps a spec.runtimes that is not a list, so it is denied as it was', async () => {
    const whole = { ...claimedSandbox(), spec: { runtimes: { name: 'csi' } } };
    expect(await selection(keepWebhookFields(whole))).toEqual(await selection(whole));
    expect(await selection(keepWebhookFields(whole))).toMatchObject({
      ok: false,
      denial: { code: 'SI_SANDBOX_SPEC_INVALID' },
    });
  });

  it(
    'gives the same selection as the whole object for arbitrary Sandboxes and pod annotations',
    async () => {
      const policyValue = fc.oneof(fc.constantFrom('None', 'Auto', '', 'always'), fc.string());
      const annotations = fc.dictionary(
        fc.constantFrom(POLICY, REQUEST, TOKEN, 'agents.kruise.io/runtimes', 'other'),
        policyValue,
      );
      const runtime = fc.oneof(
        fc.record({ name: fc.constantFrom('agent-runtime', 'csi', '', 'gen/x') }, { requiredKeys: [] }),
        fc.record({ name: fc.anything(), image: fc.string() }),
        fc.anything(),
      );
      const spec = fc.record(
        {
          runtimes: fc.oneof(fc.array(runtime, { maxLength: 4 }), fc.anything()),
          envVarsInjectionPolicy: fc.oneof(policyValue, fc.anything()),
          template: fc.anything(),
        },
        { requiredKeys: [] },
      );
      const sandbox = fc.record(
        {
          metadata: fc.record({ annotations }, { requiredKeys: [] }),
          spec: fc.oneof(spec, fc.anything()),
          status: fc.anything(),
        },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(sandbox, annotations, async (drawn, podAnnotations) => {
          const whole = {
            ...drawn,
            metadata: { ...drawn.metadata, name: 'sbx', namespace: 'team-a', uid: 'sbx-uid' },
          } as Sandbox;
          const pod = ownedPod('sbx', 'sbx-uid', podAnnotations);
          expect(await selection(keepWebhookFields(whole), pod)).toEqual(await selection(whole, pod));
        }),
        { numRuns: propertyRuns(2_000) },
      );
    },
    propertyTimeout(propertyRuns(2_000)),
  );
});

describe('watchSandboxes', () => {
  it('stores listed and watched Sandboxes cut, without the request, the tokens or the status', async () => {
    const cache = sandboxCache({ sandboxes: [claimedSandbox()] });
    const watchRequest = await cache.started;
    expect(cache.watch.hasSynced).toBe(true);
    expect(cache.watch.get('sbx', 'team-a')).toEqual(CUT);

    watchRequest.event('ADDED', claimedSandbox('other', 'other-uid', '13'));
    watchRequest.event('MODIFIED', claimedSandbox('sbx', 'sbx-uid', '14'));
    for (const stored of cache.watch.list()) {
      expect(stored).not.toHaveProperty('status');
      expect(stored.metadata?.annotations).toEqual({ [POLICY]: 'Auto' });
      expect(Object.keys(stored.metadata ?? {}).sort()).toEqual([
        'annotations',
        'name',
        'namespace',
        'resourceVersion',
        'uid',
      ]);
    }
    expect(cache.watch.get('sbx', 'team-a')?.metadata?.resourceVersion).toBe('14');

    // Admission reads the stored object: no GET, and the runtimes and policy of the whole Sandbox.
    const owned = await runtimesFromOwner(ownedPod('other', 'other-uid'), request, cache.lookup, false);
    expect(cache.gets()).toBe(0);
    expect(owned).toEqual(
      await runtimesFromOwner(
        ownedPod('other', 'other-uid'),
        request,
        () => Promise.resolve(claimedSandbox('other', 'other-uid', '13')),
        false,
      ),
    );
    expect(owned).toMatchObject({ ok: true, runtimes: ['agent-runtime', 'csi'], policy: 'Auto' });
    await cache.watch.stop();
  });

  it('cuts a Sandbox fetched on a miss too, and gives none whose uid differs', async () => {
    const cache = sandboxCache({ sandboxes: [], fetched: claimedSandbox('late', 'late-uid') });
    await cache.started;
    const fetched = await cache.lookup('team-a', 'late', 'late-uid');
    expect(cache.gets()).toBe(1);
    expect(fetched).toEqual({ ...CUT, metadata: { ...CUT.metadata, name: 'late', uid: 'late-uid' } });
    expect(await cache.lookup('team-a', 'late', 'another-uid')).toBeUndefined();
    await cache.watch.stop();
  });
});
