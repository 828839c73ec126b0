import type { ErrorObject } from 'ajv';
import { describeShapeError, fieldPathName } from '../shapes/schema-errors.js';

/** "request.uid must be string": a malformed review's message, naming the field. */
export function describeReviewError(body: unknown, errors: readonly ErrorObject[] | null | undefined): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return 'body must be an AdmissionReview object';
  }
  return `malformed AdmissionReview: ${describeShapeError(errors, fieldPathName(''))}`;
}

/** A pod whose fields the injection reads are of the wrong type: say which. */
export function describePodError(errors: readonly ErrorObject[] | null | undefined): string {
  return describeShapeError(errors, fieldPathName('object'));
}
