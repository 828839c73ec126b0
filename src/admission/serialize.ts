import type { AdmissionReview } from './types.js';

/**
 * The review as JSON text. The base64 patch is by far its largest field and never needs escaping, so it is
 * spliced in rather than scanned a second time by JSON.stringify (~10 µs on a 20 KB pod's answer).
 */
export function reviewJson(review: AdmissionReview): string {
  const response = review.response;
  if (response?.patch === undefined) return JSON.stringify(review);
  const { patch, ...rest } = response;
  const head = JSON.stringify({ apiVersion: review.apiVersion, kind: review.kind, response: rest });
  // head ends with the two closing braces of `response` and of the review.
  return `${head.slice(0, -2)},"patch":"${patch}"}}`;
}
