import { Ajv } from 'ajv';
import type { Pod } from '../injection/index.js';
import type { AdmissionReviewRequest } from './types.js';

/** The API versions of AdmissionReview we speak; the answer always carries the request's own. */
export const ADMISSION_API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;

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

const stringArray = { type: 'array', items: { type: 'string' } } as const;
const named = { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } as const;
const probe = { type: 'object', properties: { exec: { type: 'object', properties: { command: stringArray } } } } as const;
const container = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string' },
    command: stringArray,
    args: stringArray,
    env: { type: 'array', items: named },
    volumeMounts: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'mountPath'],
        properties: { name: { type: 'string' }, mountPath: { type: 'string' } },
      },
    },
    lifecycle: { type: 'object', properties: { postStart: { type: 'object' } } },
    startupProbe: probe,
    livenessProbe: probe,
    readinessProbe: probe,
  },
} as const;
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;

/** The parts of a pod the injection reads or writes; a pod that breaks these would be broken by a patch. */
const podSchema = {
  type: 'object',
  required: ['metadata', 'spec'],
  properties: {
    metadata: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        generateName: { type: 'string' },
        namespace: { type: 'string' },
        labels: stringMap,
        annotations: stringMap,
        ownerReferences: {
          type: 'array',
          items: {
            type: 'object',
            required: ['apiVersion', 'kind', 'name', 'uid'],
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              name: { type: 'string' },
              uid: { type: 'string' },
              controller: { type: 'boolean' },
            },
          },
        },
      },
    },
    spec: {
      type: 'object',
      required: ['containers'],
      properties: {
        containers: { type: 'array', items: container },
        initContainers: { type: 'array', items: container },
        volumes: { type: 'array', items: named },
      },
    },
  },
} as const;

export const validateReview = ajv.compile<AdmissionReviewRequest>(reviewSchema);
export const validatePod = ajv.compile<Pod>(podSchema);
