import { describe, expect, it } from 'vitest';
import { reviewBytes } from '../../src/admission/answers.js';
import type { AdmissionReview } from '../../src/kube-shapes/admission-review.js';

describe('reviewBytes', () => {
  const base = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' as const };

  it.each<[string, AdmissionReview]>([
    [
      'a patch and warnings',
      {
        ...base,
        response: {
          uid: 'u',
          allowed: true,
          patchType: 'JSONPatch',
          patch: 'W3sib3AiOiJhZGQifV0=',
          warnings: ['a "quoted" one'],
        },
      },
    ],
    [
      'a patch after text that is not ASCII',
      {
        ...base,
        response: {
          uid: 'ü-€-😀',
          allowed: true,
          patchType: 'JSONPatch',
          patch: 'W10=',
          warnings: ['Pod agents/sbx-ü: ✓'],
        },
      },
    ],
    ['no patch', { ...base, response: { uid: 'u', allowed: true } }],
    ['a denial', { ...base, response: { uid: 'u', allowed: false, status: { code: 400, message: 'bad\nthing' } } }],
  ])('is JSON that parses back to the review (%s)', (_name, review) => {
    const bytes = reviewBytes(review);
    expect(JSON.parse(bytes.toString('utf8'))).toEqual(review);
    expect(bytes.length).toBe(Buffer.byteLength(JSON.stringify(review)));
  });
});
