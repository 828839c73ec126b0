export type {
  AdmissionRequest,
  AdmissionResponse,
  AdmissionReview,
  AdmissionReviewRequest,
  AdmissionStatus,
  GroupVersionKind,
} from '../shapes/admission-review.js';
export type { Pod } from '../injection/index.js';
