import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ConfigSnapshot } from '../../src/config/injection-config.js';
import { reviewAdmission, type ReviewDeps } from '../../src/admission/review.js';
import type { Pod } from '../../src/injection/index.js';
import { InjectionConfigStore } from '../../src/config/injection-config.js';
import { runtimesFromOwner, type Sandbox } from '../../src/admission/sandbox-runtimes.js';
import { runtimesFromAnnotations } from '../../src/sandbox/runtime-selection.js';
import { AGENT_CONFIG, CSI_CONFIG, PROXY_CONFIG } from '../support/builders.js';
import { decodePatch, reviewFor } from '../support/conformance.js';
import { applyStrict } from '../support/strict-patch.js';
import { propertyRuns, propertyTimeout } from '../support/property-runs.js';
import { podArbitrary } from './arbitraries.js';

const store = new InjectionConfigStore();
store.update({
  'agent-runtime': JSON.stringify(AGENT_CONFIG),
  csi: JSON.stringify(CSI_CONFIG),
  'traffic-proxy': JSON.stringify(PROXY_CONFIG),
});
const annotationDeps: ReviewDeps = {
  config: (): ConfigSnapshot => store.snapshot(),
  selectRuntimes: runtimesFromAnnotations,
};

/** Cluster mode's selection, with every lookup answered by a Sandbox of arbitrary (possibly nonsense) spec. */
function ownerDeps(sandbox: unknown): ReviewDeps {
  return {
    config: () => store.snapshot(),
    selectRuntimes: (pod, request) => runtimesFromOwner(pod, request, () => Promise.resolve(sandbox as Sandbox), true),
  };
}

const keys = [
  'agents.kruise.io/runtimes',
  'agents.kruise.io/env-vars-injection-policy',
  'agents.kruise.io/runtime-injection-status',
];

/** A valid sandbox pod with one part replaced by arbitrary JSON: where a malformed request hides its damage. */
const damagedPod = fc
  .tuple(
    podArbitrary,
    fc.constantFrom(
      ['metadata'],
      ['metadata', 'annotations'],
      ['metadata', 'annotations', 'agents.kruise.io/runtimes'],
      ['metadata', 'annotations', 'agents.kruise.io/env-vars-injection-policy'],
      ['metadata', 'annotations', 'agents.kruise.io/runtime-injection-status'],
      ['metadata', 'labels'],
      ['metadata', 'ownerReferences'],
      ['spec'],
      ['spec', 'containers'],
      ['spec', 'containers', '0'],
      ['spec', 'containers', '0', 'command'],
      ['spec', 'containers', '0', 'env'],
      ['spec', 'containers', '0', 'volumeMounts'],
      ['spec', 'containers', '0', 'lifecycle'],
      ['spec', 'containers', '0', 'readinessProbe'],
      ['spec', 'initContainers'],
      ['spec', 'volumes'],
    ),
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom('agent-runtime', 'agent-runtime,csi', 'csi,traffic-proxy', 'gpu', ''),
    fc.constantFrom('None', 'Auto', 'auto'),
  )
  .map(([pod, path, junk, runtimes, policy]) => {
    const copy = JSON.parse(JSON.stringify(pod)) as Record<string, unknown>;
    const metadata = copy.metadata as Record<string, unknown>;
    metadata.annotations = { ...(metadata.annotations as object), [keys[0] ?? '']: runtimes, [keys[1] ?? '']: policy };
    let node: Record<string, unknown> = copy;
    for (const key of path.slice(0, -1)) {
      const next = node[key];
      if (next === null || typeof next !== 'object') return copy;
      node = next as Record<string, unknown>;
    }
    node[path[path.length - 1] ?? ''] = junk;
    return copy;
  });

async function expectSound(body: unknown, deps: ReviewDeps, pod: unknown): Promise<void> {
  const outcome = await reviewAdmission(body, deps);
  if (outcome.kind === 'bad-request') {
    expect(outcome.message.length).toBeGreaterThan(0);
    return;
  }
  const response = outcome.review.response;
  expect(response?.uid).toBe('conformance-uid');
  if (response?.allowed === false) {
    expect(response.status?.message?.length ?? 0).toBeGreaterThan(0);
    expect(response.patch).toBeUndefined();
  }
  // Any patch must apply to the object as kube-apiserver applies it.
  if (response?.patch !== undefined) applyStrict(pod, decodePatch(response.patch));
}

const DAMAGED = propertyRuns(2000);
const OTHERS = propertyRuns(1000);

describe('reviews with damaged parts never crash, never patch what they cannot', () => {
  it(
    `${DAMAGED} pods with a part replaced by arbitrary JSON, runtimes from annotations`,
    async () => {
      await fc.assert(
        fc.asyncProperty(damagedPod, async (pod) => expectSound(reviewFor(pod), annotationDeps, pod)),
        { numRuns: DAMAGED },
      );
    },
    propertyTimeout(DAMAGED),
  );

  it(
    `${OTHERS} owned pods whose Sandbox has an arbitrary spec`,
    async () => {
      const owned = podArbitrary.map((pod): Pod => ({
        ...pod,
        metadata: {
          ...pod.metadata,
          ownerReferences: [
            { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: 's', uid: 'u', controller: true },
          ],
        },
      }));
      await fc.assert(
        fc.asyncProperty(owned, fc.jsonValue({ maxDepth: 3 }), async (pod, spec) =>
          expectSound(reviewFor(pod), ownerDeps({ metadata: { uid: 'u' }, spec }), pod),
        ),
        { numRuns: OTHERS },
      );
    },
    propertyTimeout(OTHERS),
  );

  it(
    `${OTHERS} arbitrary bodies and envelopes are answered, not thrown`,
    async () => {
      const envelope = fc.record({
        apiVersion: fc.oneof(fc.constant('admission.k8s.io/v1'), fc.jsonValue()),
        kind: fc.oneof(fc.constant('AdmissionReview'), fc.jsonValue()),
        request: fc.oneof(
          fc.jsonValue(),
          fc.record({ uid: fc.jsonValue(), kind: fc.jsonValue(), operation: fc.jsonValue(), object: fc.jsonValue() }),
        ),
      });
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.jsonValue(), envelope), async (body) => {
          await expect(reviewAdmission(body, annotationDeps)).resolves.toBeDefined();
        }),
        { numRuns: OTHERS },
      );
    },
    propertyTimeout(OTHERS),
  );
});
