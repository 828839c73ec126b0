/**
 * The Kubernetes shapes both borders read: the pod in an AdmissionReview, and the containers, volumes and maps
 * of an injection-config key. Declared once here; `json-schema.ts` derives each border's ajv schema from them and
 * `go-json.ts` reads a config value the way Go's encoding/json reads it into the same k8s.io/api structs.
 *
 * A struct lists every field name its Go struct has (Go matches them case-insensitively, and drops the rest),
 * but types only the fields the rules read or write; the others are `any` and ride along untouched.
 */
export type Shape =
  | { readonly type: 'string' }
  | { readonly type: 'boolean' }
  | { readonly type: 'any' }
  | { readonly type: 'list'; readonly of: Shape }
  | { readonly type: 'map'; readonly of: Shape }
  | StructShape;

export interface StructShape {
  readonly type: 'struct';
  readonly fields: Readonly<Record<string, Shape>>;
  /** Fields Go always writes (no `omitempty`): a pod must have them, and a config that leaves them out gets "". */
  readonly always?: readonly string[];
}

const string: Shape = { type: 'string' };
const boolean: Shape = { type: 'boolean' };
const any: Shape = { type: 'any' };
const list = (of: Shape): Shape => ({ type: 'list', of });
const stringMap: Shape = { type: 'map', of: string };
const struct = (fields: Record<string, Shape>, always: readonly string[] = []): StructShape => ({
  type: 'struct',
  fields,
  always,
});
/** Field names whose contents the rules never read. */
const untyped = (...names: string[]): Record<string, Shape> => Object.fromEntries(names.map((name) => [name, any]));

const execAction = struct({ command: list(string) });

const lifecycleHandler = struct({ exec: execAction, ...untyped('httpGet', 'tcpSocket', 'sleep') });

const lifecycle = struct({ postStart: lifecycleHandler, preStop: lifecycleHandler, stopSignal: any });

const probe = struct({
  exec: execAction,
  ...untyped(
    'httpGet',
    'tcpSocket',
    'grpc',
    'initialDelaySeconds',
    'timeoutSeconds',
    'periodSeconds',
    'successThreshold',
    'failureThreshold',
    'terminationGracePeriodSeconds',
  ),
});

const envVar = struct({ name: string, value: string, valueFrom: any }, ['name']);

const volumeMount = struct(
  {
    name: string,
    mountPath: string,
    ...untyped('readOnly', 'recursiveReadOnly', 'subPath', 'mountPropagation', 'subPathExpr'),
  },
  ['name', 'mountPath'],
);

export const container = struct(
  {
    name: string,
    image: string,
    command: list(string),
    args: list(string),
    env: list(envVar),
    volumeMounts: list(volumeMount),
    lifecycle,
    startupProbe: probe,
    livenessProbe: probe,
    readinessProbe: probe,
    ...untyped(
      'workingDir',
      'ports',
      'envFrom',
      'resources',
      'resizePolicy',
      'restartPolicy',
      'restartPolicyRules',
      'volumeDevices',
      'terminationMessagePath',
      'terminationMessagePolicy',
      'imagePullPolicy',
      'securityContext',
      'stdin',
      'stdinOnce',
      'tty',
    ),
  },
  ['name'],
);

/** A Volume is its name plus one of the VolumeSource fields, inlined. */
export const volume = struct(
  {
    name: string,
    ...untyped(
      'hostPath',
      'emptyDir',
      'gcePersistentDisk',
      'awsElasticBlockStore',
      'gitRepo',
      'secret',
      'nfs',
      'iscsi',
      'glusterfs',
      'persistentVolumeClaim',
      'rbd',
      'flexVolume',
      'cinder',
      'cephfs',
      'flocker',
      'downwardAPI',
      'fc',
      'azureFile',
      'configMap',
      'vsphereVolume',
      'quobyte',
      'azureDisk',
      'photonPersistentDisk',
      'projected',
      'portworxVolume',
      'scaleIO',
      'storageos',
      'csi',
      'ephemeral',
      'image',
    ),
  },
  ['name'],
);

/** One injection-config key: the Go struct the Sandbox controller decodes it into, with its JSON names. */
export const runtimeConfig = struct({
  mainContainer: container,
  csiSidecar: list(container),
  volume: list(volume),
  annotations: stringMap,
  labels: stringMap,
  initContainers: list(container),
  containers: list(container),
});

const ownerReference = struct(
  { apiVersion: string, kind: string, name: string, uid: string, controller: boolean },
  ['apiVersion', 'kind', 'name', 'uid'],
);

/** The parts of a pod the injection reads or writes; a pod that breaks these would be broken by a patch. */
export const pod = struct(
  {
    metadata: struct({
      name: string,
      generateName: string,
      namespace: string,
      labels: stringMap,
      annotations: stringMap,
      ownerReferences: list(ownerReference),
    }),
    spec: struct({ containers: list(container), initContainers: list(container), volumes: list(volume) }, [
      'containers',
    ]),
  },
  ['metadata', 'spec'],
);
