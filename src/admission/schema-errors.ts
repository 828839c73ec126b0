import type { ErrorObject } from 'ajv';

/** "request.uid must be string": a malformed review's message, naming the field. */
export function describeReviewError(body: unknown, errors: readonly ErrorObject[] | null | undefined): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return 'body must be an AdmissionReview object';
  }
  return `malformed AdmissionReview: ${fieldMessage(errors, '')}`;
}

/** A pod whose fields the injection reads are of the wrong type: say which. */
export function describePodError(errors: readonly ErrorObject[] | null | undefined): string {
  return fieldMessage(errors, 'object');
}

function fieldMessage(errors: readonly ErrorObject[] | null | undefined, root: string): string {
  const first = errors?.[0];
  if (first === undefined) return 'unknown shape error';
  const path = first.instancePath.split('/').filter((p) => p !== '');
  const field = [root, ...path].filter((p) => p !== '').join('.');
  if (first.keyword === 'required') {
    const missing = String((first.params as { missingProperty?: unknown }).missingProperty);
    return `field ${field === '' ? missing : `${field}.${missing}`} is required`;
  }
  if (first.keyword === 'enum' || first.keyword === 'const') {
    const allowed = (first.params as { allowedValues?: unknown[]; allowedValue?: unknown });
    const values = allowed.allowedValues ?? [allowed.allowedValue];
    return `field ${field} must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return `field ${field === '' ? '(top level)' : field} ${first.message ?? 'is invalid'}`;
}
