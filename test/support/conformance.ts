import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';
import { STATUS_ANNOTATION } from '../../src/injection/index.js';
import { podCreateReview } from '../../src/kube-shapes/pod-create-review.js';
import { applyStrict, type PatchOperation } from './strict-patch.js';

export const CONFORMANCE_DIR = new URL('../fixtures/conformance/', import.meta.url).pathname;
/** Our own cases in the shared format, for what the spec leaves to us (never copied into the shared set). */
export const OUR_CONFORMANCE_DIR = new URL('../fixtures/conformance-ours/', import.meta.url).pathname;

export interface ConformanceCase {
  file: string;
  name: string;
  /** Extra flags of `serve` (and of `review`) for this case. */
  flags?: string[];
  configMap?: Record<string, unknown> | null;
  pod: Record<string, unknown>;
  expect: {
    allowed: boolean;
    /** Whether the pod changed, apart from the status annotation (whose format is ours). */
    changed?: boolean;
    pod?: Record<string, unknown>;
    warnings?: boolean;
    /** Not a single warning allowed. */
    noWarnings?: boolean;
    /** Ours only: each text is in one of the warnings. */
    warningsMention?: string[];
    messageMentions?: string[];
    /** Ours only: the answer has no patch at all (a reinvocation of an admitted pod). */
    noPatch?: boolean;
    /** Ours only: the status annotation's record of traffic-proxy's probe rewrite; without it, no record. */
    healthProbeRewrite?: { proxy: string; probes: string[] };
  };
}

/** Each case is parsed afresh per call, so a test that mutates one cannot leak into another. */
export function loadConformanceCases(dir = CONFORMANCE_DIR): ConformanceCase[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({
      file,
      ...(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Omit<ConformanceCase, 'file'>),
    }));
}

/** The review kube-apiserver would send for creating the case's pod in `default`: the CLI's envelope. */
export function reviewFor(pod: unknown, uid = 'conformance-uid'): Record<string, unknown> {
  return { ...podCreateReview(pod, { uid, namespace: 'default' }) };
}

export interface ReviewResponseLike {
  uid: string;
  allowed: boolean;
  patchType?: string;
  patch?: string;
  warnings?: string[];
  status?: { code?: number; message?: string };
}

export function decodePatch(patch: string): PatchOperation[] {
  return JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as PatchOperation[];
}

/** The pod the response produces, by a strict applier; the status annotation is returned apart. */
export function admittedPod(
  pod: unknown,
  response: ReviewResponseLike,
): { pod: Record<string, unknown>; status?: string } {
  const result = response.patch === undefined ? structuredClone(pod) : applyStrict(pod, decodePatch(response.patch));
  return withoutStatus(result as Record<string, unknown>, pod);
}

type WithAnnotations = { metadata?: { annotations?: Record<string, string> } };

/**
 * The pod without the status annotation (its format is ours, so cases do not spell it out). An annotations
 * map that only the status created is dropped too.
 */
export function withoutStatus(
  pod: Record<string, unknown>,
  original: unknown,
): { pod: Record<string, unknown>; status?: string } {
  const copy = structuredClone(pod) as WithAnnotations;
  const annotations = copy.metadata?.annotations;
  const status = annotations?.[STATUS_ANNOTATION];
  if (annotations !== undefined && copy.metadata !== undefined) {
    delete annotations[STATUS_ANNOTATION];
    const hadAnnotations = (original as WithAnnotations).metadata?.annotations !== undefined;
    if (!hadAnnotations && Object.keys(annotations).length === 0) delete copy.metadata.annotations;
  }
  return { pod: copy, status };
}

/** What every transport must answer for a case: the uid, the decision, and the exact pod the patch gives. */
export function expectConformance(testCase: ConformanceCase, response: ReviewResponseLike): void {
  expect(response.uid).toBe(`uid-${testCase.name}`);
  expect(response.allowed).toBe(testCase.expect.allowed);
  if (!testCase.expect.allowed) {
    expect(response.patch).toBeUndefined();
    for (const word of testCase.expect.messageMentions ?? []) expect(response.status?.message).toContain(word);
    return;
  }
  const admitted = admittedPod(testCase.pod, response);
  if (testCase.expect.changed !== undefined) {
    expect(admitted.pod).toEqual(testCase.expect.pod);
    // A reinvocation's input carries the status already: it too is compared without it.
    const input = withoutStatus(testCase.pod, testCase.pod).pod;
    expect(isDeepStrictEqual(admitted.pod, input)).toBe(!testCase.expect.changed);
  }
  if (testCase.expect.noPatch === true) expect(response.patch).toBeUndefined();
  expect(response.patchType).toBe(response.patch === undefined ? undefined : 'JSONPatch');
  expect(admitted.pod).toEqual(testCase.expect.pod);
  if (testCase.expect.warnings !== undefined) {
    expect((response.warnings ?? []).length > 0).toBe(testCase.expect.warnings);
  }
  if (testCase.expect.noWarnings === true) expect(response.warnings).toBeUndefined();
  for (const text of testCase.expect.warningsMention ?? []) {
    expect(
      response.warnings?.some((warning) => warning.includes(text)),
      text,
    ).toBe(true);
  }
  expectStatusRecorded(testCase, admitted.status);
}

/**
 * A pod that asked for runtimes, with a ConfigMap to read them from, carries the status annotation afterwards
 * (the webhook writes it unless the pod already holds the same value); one that asked for none does not get it.
 */
function expectStatusRecorded(testCase: ConformanceCase, status: string | undefined): void {
  const annotations = (testCase.pod as WithAnnotations).metadata?.annotations ?? {};
  const asked = (annotations['agents.kruise.io/runtimes'] ?? '').trim() !== '';
  const configured = testCase.configMap !== undefined && testCase.configMap !== null;
  if (!asked || !configured) {
    expect(status).toBeUndefined();
    return;
  }
  const parsed = JSON.parse(status ?? 'null') as Record<string, unknown>;
  // A new record names the config revision it was made from; a pod that carried a record keeps its keys.
  const earlier = annotations[STATUS_ANNOTATION];
  if (earlier === undefined) expect(parsed.revision).toMatch(/^sha256:[0-9a-f]{16}$/);
  const keys = ['injected', 'present', 'skipped', 'wrapped', ...('revision' in parsed ? ['revision'] : [])];
  // One more key only on a pod whose probes traffic-proxy's rewrite sent through the proxy.
  expect(Object.keys(parsed)).toEqual('healthProbeRewrite' in parsed ? [...keys, 'healthProbeRewrite'] : keys);
  if (testCase.expect.healthProbeRewrite !== undefined) {
    expect(parsed.healthProbeRewrite).toEqual(testCase.expect.healthProbeRewrite);
  } else {
    expect(parsed).not.toHaveProperty('healthProbeRewrite');
  }
}
