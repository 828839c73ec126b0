import type { AdmissionReview } from './types.js';

/**
 * The review as the UTF-8 bytes the server sends: one buffer, so its length is known without measuring a string
 * and the socket sends it without encoding it again. The base64 patch is by far its largest field and never
 * needs escaping, so it is copied in rather than scanned a second time by JSON.stringify.
 */
export function reviewBytes(review: AdmissionReview): Buffer {
  const response = review.response;
  if (response?.patch === undefined) return Buffer.from(JSON.stringify(review));
  const { patch, ...rest } = response;
  const text = JSON.stringify({ apiVersion: review.apiVersion, kind: review.kind, response: rest });
  // text ends with the two closing braces of `response` and of the review.
  const head = `${text.slice(0, -2)},"patch":"`;
  const headBytes = Buffer.byteLength(head);
  const bytes = Buffer.allocUnsafe(headBytes + patch.length + 3);
  bytes.write(head, 0);
  // base64 is ASCII: one byte per character.
  bytes.write(patch, headBytes, 'latin1');
  bytes.write('"}}', headBytes + patch.length, 'latin1');
  return bytes;
}
