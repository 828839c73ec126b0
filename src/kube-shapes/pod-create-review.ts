/**
 * The AdmissionReview kube-apiserver sends when a pod is created, made once for everything that sends one
 * without a cluster: the CLI's inject and explain, the tests, the bench and the soak.
 */
import type { AdmissionRequest, AdmissionReviewRequest, GroupVersionKind } from './admission-review.js';

/** The request with the fields a live kube-apiserver adds that the webhook does not read. */
export interface PodCreateRequest extends AdmissionRequest {
  requestKind?: GroupVersionKind;
  options?: { kind: string; apiVersion: string };
}

export interface PodCreateReview extends AdmissionReviewRequest {
  request: PodCreateRequest;
}

export interface PodCreateOptions {
  uid: string;
  namespace: string;
  /**
   * Who creates the pod. Given, the request carries the rest of what a live kube-apiserver sends too (the
   * request kind, dryRun, the create options), for a harness that sends what a cluster sends.
   */
  userInfo?: AdmissionRequest['userInfo'];
}

const podKind = (): GroupVersionKind => ({ group: '', version: 'v1', kind: 'Pod' });

/** The review of creating `pod`, its fields in kube-apiserver's order; each call makes new objects throughout. */
export function podCreateReview(pod: unknown, { uid, namespace, userInfo }: PodCreateOptions): PodCreateReview {
  const asSent = userInfo !== undefined;
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: podKind(),
      resource: { group: '', version: 'v1', resource: 'pods' },
      ...(asSent ? { requestKind: podKind() } : {}),
      operation: 'CREATE',
      namespace,
      ...(asSent ? { userInfo } : {}),
      object: pod,
      ...(asSent ? { dryRun: false, options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' } } : {}),
    },
  };
}
