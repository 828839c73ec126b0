import { describe, expect, it } from 'vitest';
import { reviewJson } from '../../src/admission/serialize.js';
import type { AdmissionReview } from '../../src/admission/types.js';

describe('reviewJson', () => {
  const base = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' as const };

  it.each<[string, AdmissionReview]>([
    ['a patch and warnings', { ...base, response: { uid: 'u', allowed: true, patchType: 'JSONPatch', patch: 'W3sib3AiOiJhZGQifV0=', warnings: ['a "quoted" one'] } }],
    ['no patch', { ...base, response: { uid: 'u', allowed: true } }],
    ['a denial', { ...base, response: { uid: 'u', allowed: false, status: { code: 400, message: 'bad\nthing' } } }],
  ])('is JSON that parses back to the review (%s)', (_name, review) => {
    expect(JSON.parse(reviewJson(review))).toEqual(review);
  });
});
