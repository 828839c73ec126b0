import { describe, expect, it } from 'vitest';
import { podCreateReview } from '../../src/kube-shapes/pod-create-review.js';

const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'main' }] } };

describe('podCreateReview', () => {
  it('makes the fields the webhook reads, and no more, without a creator', () => {
    expect(podCreateReview(pod, { uid: 'u-1', namespace: 'team-a' })).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u-1',
        kind: { group: '', version: 'v1', kind: 'Pod' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        operation: 'CREATE',
        namespace: 'team-a',
        object: pod,
      },
    });
  });

  it("adds the rest of what kube-apiserver sends with a creator, in kube-apiserver's order", () => {
    const userInfo = { username: 'system:serviceaccount:ns:sa', groups: ['system:serviceaccounts'] };
    const { request } = podCreateReview(pod, { uid: 'u-2', namespace: 'team-a', userInfo });
    expect(Object.keys(request)).toEqual([
      'uid',
      'kind',
      'resource',
      'requestKind',
      'operation',
      'namespace',
      'userInfo',
      'object',
      'dryRun',
      'options',
    ]);
    expect(request).toMatchObject({
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      userInfo,
      dryRun: false,
      options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
    });
  });

  it('shares no object between two reviews but the pod, so a test may change one', () => {
    const first = podCreateReview(pod, { uid: 'a', namespace: 'n', userInfo: {} });
    const second = podCreateReview(pod, { uid: 'b', namespace: 'n', userInfo: {} });
    expect(first.request.kind).not.toBe(second.request.kind);
    expect(first.request.requestKind).not.toBe(first.request.kind);
    expect(first.request.resource).not.toBe(second.request.resource);
    expect(first.request.object).toBe(pod);
  });
});
