import { Ajv, type ErrorObject } from 'ajv';
import type { Pod } from '../injection/index.js';
import type { AdmissionReviewRequest } from '../kube-shapes/admission-review.js';
import { jsonSchemaOf, type JsonSchema } from '../kube-shapes/json-schema.js';
import { pod as podShape } from '../kube-shapes/kubernetes.js';
import { describeShapeError, fieldPathName } from '../kube-shapes/schema-errors.js';
import { POD_MAP_FIELDS } from './pod-limits.js';

/** The API versions of AdmissionReview we speak; the answer always carries the request's own. */
const ADMISSION_API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;

const ajv = new Ajv({ allErrors: false, strict: true });

/**
 * Only the envelope is checked here, not the object; the pod gets its own schema below, limited to the fields
 * the webhook reads or writes, so a large pod costs a few microseconds to check.
 */
const reviewSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'request'],
  properties: {
    apiVersion: { type: 'string', enum: [...ADMISSION_API_VERSIONS] },
    kind: { const: 'AdmissionReview' },
    request: {
      type: 'object',
      required: ['uid', 'kind', 'operation'],
      properties: {
        uid: { type: 'string', minLength: 1 },
        kind: {
          type: 'object',
          required: ['group', 'version', 'kind'],
          properties: { group: { type: 'string' }, version: { type: 'string' }, kind: { type: 'string' } },
        },
        operation: { type: 'string' },
        subResource: { type: 'string' },
        namespace: { type: 'string' },
        name: { type: 'string' },
        dryRun: { type: 'boolean' },
      },
    },
  },
} as const;

export const validateReview = ajv.compile<AdmissionReviewRequest>(reviewSchema);
/**
 * The pod's shape is shared with the injection config's (see kube-shapes/kubernetes.ts), but for the values of its
 * labels and annotations: those are checked by the size rule, which also sums their size (src/admission/pod-limits.ts)
 * and runs first, so a map of tens of thousands of entries is not walked a second time here.
 */
export const validatePod = ajv.compile<Pod>(withoutMapValues(jsonSchemaOf(podShape)));

function withoutMapValues(schema: JsonSchema): JsonSchema {
  const metadata = (schema.properties as Record<string, JsonSchema>).metadata as JsonSchema;
  const fields = { ...(metadata.properties as Record<string, JsonSchema>) };
  for (const field of POD_MAP_FIELDS) fields[field] = { type: 'object' };
  return { ...schema, properties: { ...(schema.properties as object), metadata: { ...metadata, properties: fields } } };
}

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
