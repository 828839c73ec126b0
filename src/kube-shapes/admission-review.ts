/**
 * The AdmissionReview (admission.k8s.io v1 and v1beta1) as the webhook reads and answers it. The envelope's schema
 * is src/admission/schema.ts; the object under review, a pod, has its own shape (kubernetes.ts).
 */
export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource?: { group: string; version: string; resource: string };
  subResource?: string;
  operation: string;
  name?: string;
  namespace?: string;
  object?: unknown;
  dryRun?: boolean;
  /**
   * Who sent the object, as kube-apiserver authenticated them (after impersonation). The review's schema does not
   * check it, so readers must not trust its shape: a hand-made review can put anything here.
   */
  userInfo?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
}

export interface AdmissionStatus {
  code: number;
  message: string;
  reason?: string;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: AdmissionStatus;
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: string;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionReviewRequest extends AdmissionReview {
  request: AdmissionRequest;
}
