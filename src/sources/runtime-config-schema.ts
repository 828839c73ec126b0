/**
 * The fields of an injection-config key that the rules read. Everything else in a Container or Volume is
 * passed through untouched, so the schema checks only shapes we depend on and allows additional properties.
 */
const named = { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } as const;

const envVar = named;
const volume = named;
const volumeMount = {
  type: 'object',
  required: ['name', 'mountPath'],
  properties: { name: { type: 'string', minLength: 1 }, mountPath: { type: 'string', minLength: 1 } },
} as const;
const handler = { type: 'object' } as const;
const container = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1 },
    command: { type: 'array', items: { type: 'string' } },
    args: { type: 'array', items: { type: 'string' } },
    env: { type: 'array', items: envVar },
    volumeMounts: { type: 'array', items: volumeMount },
  },
} as const;
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;

export const runtimeConfigSchema = {
  type: 'object',
  properties: {
    mainContainer: {
      type: 'object',
      properties: {
        env: { type: 'array', items: envVar },
        volumeMounts: { type: 'array', items: volumeMount },
        lifecycle: { type: 'object', properties: { postStart: handler } },
      },
    },
    csiSidecar: { type: 'array', items: container },
    volume: { type: 'array', items: volume },
    initContainers: { type: 'array', items: container },
    containers: { type: 'array', items: container },
    labels: stringMap,
    annotations: stringMap,
  },
} as const;
