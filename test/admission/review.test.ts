import { describe, expect, it } from 'vitest';
import type { ConfigSnapshot } from '../../src/config/injection-config.js';
import { JsonPointers, reviewAdmission, type ReviewDeps, type ReviewOutcome } from '../../src/admission/review.js';
import { MAX_ANNOTATIONS_BYTES } from '../../src/admission/pod-limits.js';
import { MAX_WARNINGS_BYTES, MAX_WARNING_LENGTH, limitWarnings } from '../../src/admission/warnings.js';
import { InjectionConfigStore } from '../../src/config/injection-config.js';
import { runtimesFromAnnotations } from '../../src/sandbox/runtime-selection.js';
import { admittedPod, decodePatch, reviewFor } from '../support/conformance.js';
import { AGENT_CONFIG, CSI_CONFIG } from '../support/builders.js';
import { watchedMap } from '../support/watched-map.js';

function deps(
  data: Record<string, string> | null = {
    'agent-runtime': JSON.stringify(AGENT_CONFIG),
    csi: JSON.stringify(CSI_CONFIG),
  },
): ReviewDeps & { store: InjectionConfigStore } {
  const store = new InjectionConfigStore();
  if (data !== null) store.update(data); // null: the ConfigMap does not exist
  return { store, config: (): ConfigSnapshot => store.snapshot(), selectRuntimes: runtimesFromAnnotations };
}

function sandboxPod(annotations: Record<string, string>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'sbx-', annotations },
    spec: { containers: [{ name: 'main', image: 'x', ...extra }] },
  };
}

function response(outcome: ReviewOutcome) {
  if (outcome.kind !== 'response') throw new Error(`expected a response, got ${outcome.message}`);
  const r = outcome.review.response;
  if (r === undefined) throw new Error('no response');
  return r;
}

describe('reviewAdmission: the envelope', () => {
  it.each([
    ['not an object', 'hello', /body must be an AdmissionReview object/],
    ['no request', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }, /request is required/],
    [
      'no uid',
      {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE' },
      },
      /request\.uid is required/,
    ],
    ['wrong kind', { ...reviewFor({}), kind: 'Pod' }, /field kind must be one of "AdmissionReview"/],
    ['unknown apiVersion', { ...reviewFor({}), apiVersion: 'v1' }, /apiVersion must be one of/],
  ])('a malformed review (%s) is a bad request with a message', async (_name, body, message) => {
    const outcome = await reviewAdmission(body, deps());
    expect(outcome).toMatchObject({ kind: 'bad-request' });
    expect(outcome.kind === 'bad-request' ? outcome.message : '').toMatch(message);
  });

  it("answers with the request's apiVersion, kind and uid", async () => {
    const body = { ...reviewFor(sandboxPod({}), 'u-1'), apiVersion: 'admission.k8s.io/v1beta1' };
    const outcome = await reviewAdmission(body, deps());
    expect(outcome.kind === 'response' && outcome.review).toMatchObject({
      apiVersion: 'admission.k8s.io/v1beta1',
      kind: 'AdmissionReview',
      response: { uid: 'u-1', allowed: true },
    });
  });

  it.each([
    ['an UPDATE', { operation: 'UPDATE' }],
    ['a non-Pod', { kind: { group: 'apps', version: 'v1', kind: 'Deployment' } }],
    ['a pod subresource', { subResource: 'ephemeralcontainers' }],
  ])('%s is admitted unchanged', async (_name, override) => {
    const body = reviewFor(sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime' }));
    Object.assign(body.request as object, override);
    const r = response(await reviewAdmission(body, deps()));
    expect(r).toEqual({ uid: 'conformance-uid', allowed: true });
  });
});

describe('reviewAdmission: decisions', () => {
  it('injects with a JSONPatch and a summary', async () => {
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime' });
    const outcome = await reviewAdmission(reviewFor(pod), deps());
    const r = response(outcome);
    expect(r.patchType).toBe('JSONPatch');
    expect(admittedPod(pod, r).status).toContain('"injected":["agent-runtime"]');
    expect(outcome.kind === 'response' && outcome.summary).toMatchObject({
      decision: 'injected',
      runtimes: ['agent-runtime'],
      pod: 'sbx-',
    });
  });

  it('denies a bad policy value, naming the field and the allowed values', async () => {
    const r = response(
      await reviewAdmission(
        reviewFor(
          sandboxPod({ 'agents.kruise.io/runtimes': 'csi', 'agents.kruise.io/env-vars-injection-policy': 'auto' }),
        ),
        deps(),
      ),
    );
    expect(r.allowed).toBe(false);
    expect(r.status?.code).toBe(400);
    expect(r.status?.message).toMatch(
      /env-vars-injection-policy: "auto" is not a valid EnvVarsInjectionPolicy \(allowed: None, Auto\)/,
    );
  });

  it('denies a runtime without a key, naming the runtime and the ConfigMap', async () => {
    const r = response(await reviewAdmission(reviewFor(sandboxPod({ 'agents.kruise.io/runtimes': 'gpu' })), deps()));
    expect(r).toMatchObject({ allowed: false, status: { code: 500 } });
    expect(r.status?.message).toBe('runtime "gpu" has no key in ConfigMap sandbox-system/sandbox-injection-config');
  });

  it('denies a runtime whose key is empty', async () => {
    const r = response(
      await reviewAdmission(reviewFor(sandboxPod({ 'agents.kruise.io/runtimes': 'csi' })), deps({ csi: '  ' })),
    );
    expect(r.status?.message).toMatch(/runtime "csi" has no key/);
  });

  it('denies a bad key never seen valid, saying what is wrong and where', async () => {
    const r = response(
      await reviewAdmission(
        reviewFor(sandboxPod({ 'agents.kruise.io/runtimes': 'csi' })),
        deps({ csi: '{"csiSidecar": [{"name": 3}]}' }),
      ),
    );
    expect(r.allowed).toBe(false);
    expect(r.status?.message).toMatch(/key "csi" is invalid: field \/csiSidecar\/0\/name must be string/);
  });

  it('falls back to the last valid version of a bad key, with a warning', async () => {
    const d = deps();
    d.store.update({ 'agent-runtime': '{"csiSidecar": [', csi: JSON.stringify(CSI_CONFIG) });
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime' });
    const r = response(await reviewAdmission(reviewFor(pod), d));
    expect(r.allowed).toBe(true);
    expect(admittedPod(pod, r).pod).toMatchObject({ spec: { initContainers: [{ name: 'agent-runtime' }] } });
    expect(r.warnings?.[0]).toMatch(
      /runtime "agent-runtime": key "agent-runtime" is invalid, using its last valid version/,
    );
  });

  it('admits unchanged without a ConfigMap, and a pod without runtimes', async () => {
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime' });
    expect(response(await reviewAdmission(reviewFor(pod), deps(null)))).toEqual({
      uid: 'conformance-uid',
      allowed: true,
    });
    expect(response(await reviewAdmission(reviewFor(sandboxPod({})), deps()))).toEqual({
      uid: 'conformance-uid',
      allowed: true,
    });
  });

  it('denies a pod whose fields are of the wrong type instead of patching it', async () => {
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime' }, { command: 'python app.py' });
    const r = response(await reviewAdmission(reviewFor(pod), deps()));
    expect(r.allowed).toBe(false);
    expect(r.status?.message).toBe('pod is malformed: field object.spec.containers.0.command must be array');
  });

  it('denies a request whose object is not a pod', async () => {
    const r = response(await reviewAdmission(reviewFor([1, 2]), deps()));
    expect(r).toMatchObject({ allowed: false, status: { code: 400 } });
  });

  it('patches only what changed and never replaces /spec or /metadata', async () => {
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime,csi' });
    const ops = decodePatch(response(await reviewAdmission(reviewFor(pod), deps())).patch ?? '');
    expect(ops.map((o) => o.path)).not.toContain('/spec');
    expect(ops.map((o) => o.path)).toContain('/metadata/annotations/agents.kruise.io~1runtime-injection-status');
  });

  it("keeps the patch's pointers in the deps' cache, for the next review, and patches alike with or without it", async () => {
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime,csi' });
    const pointers = new JsonPointers();
    const cached = response(await reviewAdmission(reviewFor(pod), { ...deps(), pointers }));
    expect(pointers.kept).toBeGreaterThan(0);
    const kept = pointers.kept;
    expect(response(await reviewAdmission(reviewFor(pod), { ...deps(), pointers }))).toEqual(cached);
    expect(pointers.kept).toBe(kept);
    expect(response(await reviewAdmission(reviewFor(pod), deps()))).toEqual(cached);
  });
});

describe('warnings', () => {
  it('keeps each warning on one line of at most 120 characters', () => {
    const [line] = limitWarnings([`a\nb${'x'.repeat(300)}`]);
    expect(line).toHaveLength(MAX_WARNING_LENGTH);
    expect(line).not.toContain('\n');
    expect(line?.endsWith('...')).toBe(true);
  });

  it('keeps the whole set within 4 KiB and says how many were dropped', () => {
    const many = Array.from({ length: 100 }, (_, i) => `warning ${i} ${'y'.repeat(100)}`);
    const limited = limitWarnings(many);
    expect(limited.join('').length).toBeLessThanOrEqual(MAX_WARNINGS_BYTES);
    expect(limited[limited.length - 1]).toMatch(/^\d+ more warnings omitted$/);
  });
});

describe('reviewAdmission: saying why', () => {
  const owner = { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: 'box-7', uid: 'u', controller: true };

  it("names the pod's Sandbox in every warning", async () => {
    const pod = sandboxPod({
      'agents.kruise.io/runtimes': 'csi',
      'agents.kruise.io/env-vars-injection-policy': 'Auto',
    });
    (pod.metadata as Record<string, unknown>).ownerReferences = [owner];
    const review = reviewFor(pod);
    (review.request as Record<string, unknown>).namespace = 'team-a';
    const warnings = response(await reviewAdmission(review, deps())).warnings ?? [];
    expect(warnings.length).toBeGreaterThan(0);
    for (const warning of warnings) expect(warning).toMatch(/^Sandbox team-a\/box-7: /);
  });

  it('names the pod itself when it has no Sandbox owner', async () => {
    const pod = sandboxPod({
      'agents.kruise.io/runtimes': 'csi',
      'agents.kruise.io/env-vars-injection-policy': 'Auto',
    });
    const warnings = response(await reviewAdmission(reviewFor(pod), deps())).warnings ?? [];
    expect(warnings[0]).toMatch(/^pod default\/sbx-: Auto: nothing wrapped, no agent-runtime/);
  });

  it("carries a denial's message in the summary the log line is made of", async () => {
    const outcome = await reviewAdmission(reviewFor(sandboxPod({ 'agents.kruise.io/runtimes': 'gpu' })), deps());
    if (outcome.kind !== 'response') throw new Error('expected a response');
    expect(outcome.summary).toMatchObject({
      decision: 'denied',
      message: expect.stringMatching(/runtime "gpu" has no key/) as unknown,
    });
  });

  it('records runtimes found present without calling the admission an injection', async () => {
    const sidecar = AGENT_CONFIG.csiSidecar?.[0];
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime' });
    (pod.spec as Record<string, unknown>).initContainers = [sidecar];
    const outcome = await reviewAdmission(reviewFor(pod), deps());
    if (outcome.kind !== 'response') throw new Error('expected a response');
    expect(outcome.summary).toMatchObject({ decision: 'unchanged', present: ['agent-runtime'], warnings: 0 });
    const admitted = admittedPod(pod, outcome.review.response ?? { uid: '', allowed: false });
    expect(JSON.parse(admitted.status ?? 'null')).toEqual({
      injected: [],
      present: ['agent-runtime'],
      skipped: [],
      wrapped: [],
      revision: expect.stringMatching(/^sha256:/) as unknown,
    });
  });

  it('chains postStart hooks when asked to merge', async () => {
    const pod = sandboxPod(
      { 'agents.kruise.io/runtimes': 'agent-runtime' },
      { lifecycle: { postStart: { exec: { command: ['mine'] } } } },
    );
    const merged = response(await reviewAdmission(reviewFor(pod), { ...deps(), postStartConflict: 'merge' }));
    const out = admittedPod(pod, merged).pod as { spec: { containers: { lifecycle?: unknown }[] } };
    expect(out.spec.containers[0]?.lifecycle).toEqual({
      postStart: { exec: { command: ['bash', '/mnt/envd/envd-run.sh', '--', 'mine'] } },
    });
    const skipped = response(await reviewAdmission(reviewFor(pod), deps()));
    expect(skipped.warnings?.join()).toMatch(/agent-runtime: skipped, postStart conflict/);
  });
});

describe('reviewAdmission: pods kube-apiserver would refuse for their size', () => {
  const withAnnotationBytes = (bytes: number): Record<string, unknown> => {
    const annotations: Record<string, string> = { 'agents.kruise.io/runtimes': 'csi' };
    const used = Object.entries(annotations).reduce((n, [k, v]) => n + k.length + v.length, 0);
    annotations.filler = 'x'.repeat(bytes - used - 'filler'.length);
    return sandboxPod(annotations);
  };

  it('denies annotations over 256 KiB in all, before any other work, naming the limit', async () => {
    const r = response(await reviewAdmission(reviewFor(withAnnotationBytes(MAX_ANNOTATIONS_BYTES + 1)), deps()));
    expect(r).toMatchObject({ allowed: false, status: { code: 400 } });
    expect(r.status?.message).toMatch(/metadata\.annotations exceed 262144 bytes/);
  });

  it('admits annotations of exactly 256 KiB', async () => {
    expect(response(await reviewAdmission(reviewFor(withAnnotationBytes(MAX_ANNOTATIONS_BYTES)), deps())).allowed).toBe(
      true,
    );
  });

  it('counts bytes, not characters', async () => {
    const pod = sandboxPod({ big: 'é'.repeat(MAX_ANNOTATIONS_BYTES / 2) });
    expect(response(await reviewAdmission(reviewFor(pod), deps())).allowed).toBe(false);
  });
});

describe('reviewAdmission: a pod with a huge annotation map', () => {
  it('walks the annotations once (their size and types), and neither the schema nor the injection walks them again', async () => {
    const entries: Record<string, string> = {
      'agents.kruise.io/runtimes': 'agent-runtime,csi',
      'agents.kruise.io/env-vars-injection-policy': 'Auto',
    };
    for (let i = 0; i < 30_000; i++) entries[`k${i}`] = 'v';
    const { map, enumerations } = watchedMap(entries);
    const r = response(await reviewAdmission(reviewFor(sandboxPod(map, { command: ['run'] })), deps()));
    expect(r.allowed).toBe(true);
    expect(decodePatch(r.patch ?? '').filter((o) => o.path.startsWith('/metadata/'))).toHaveLength(1);
    expect(enumerations()).toBe(1);
  });

  it('denies a value that is not a string, naming it, from the same walk', async () => {
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'csi' });
    (pod.metadata as { annotations: Record<string, unknown> }).annotations.count = 3;
    const r = response(await reviewAdmission(reviewFor(pod), deps()));
    expect(r).toMatchObject({ allowed: false, status: { code: 400 } });
    expect(r.status?.message).toBe('pod is malformed: field object.metadata.annotations.count must be string');
  });

  it('denies a label value that is not a string', async () => {
    const pod = sandboxPod({});
    (pod.metadata as Record<string, unknown>).labels = { app: ['a'] };
    const r = response(await reviewAdmission(reviewFor(pod), deps()));
    expect(r.status?.message).toBe('pod is malformed: field object.metadata.labels.app must be string');
  });
});

describe('reviewAdmission: the config revision in the status', () => {
  const statusOf = (outcome: ReviewOutcome, pod: unknown): Record<string, unknown> =>
    JSON.parse(admittedPod(pod, response(outcome)).status ?? '{}') as Record<string, unknown>;

  it("records the revision of the keys used, as the config's snapshot gives it", async () => {
    const d = deps();
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime,csi' });
    const status = statusOf(await reviewAdmission(reviewFor(pod), d), pod);
    const snapshot = d.store.snapshot();
    if (!snapshot.present) throw new Error('no config');
    expect(status.revision).toBe(snapshot.revision(['agent-runtime', 'csi']));
    expect(status.revision).toMatch(/^sha256:[0-9a-f]{16}$/);
  });

  it('records another revision once a used key changes, the same one after an edit of an unused key', async () => {
    const pod = sandboxPod({ 'agents.kruise.io/runtimes': 'agent-runtime' });
    const d = deps();
    const before = statusOf(await reviewAdmission(reviewFor(pod), d), pod).revision;
    d.store.update({ 'agent-runtime': JSON.stringify(AGENT_CONFIG), csi: JSON.stringify({ volume: [{ name: 'v' }] }) });
    expect(statusOf(await reviewAdmission(reviewFor(pod), d), pod).revision).toBe(before);
    d.store.update({ 'agent-runtime': JSON.stringify({ ...AGENT_CONFIG, volume: [{ name: 'new' }] }) });
    expect(statusOf(await reviewAdmission(reviewFor(pod), d), pod).revision).not.toBe(before);
  });
});
