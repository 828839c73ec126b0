/**
 * The Kubernetes shapes both borders read: the pod in an AdmissionReview, and the containers, volumes and maps
 * of an injection-config key. Declared once here: their TypeScript types are derived from them (`TypeOf`, below),
 * `json-schema.ts` derives each border's ajv schema from them, and `go-json.ts` reads a config value the way Go's
 * encoding/json reads it into the same k8s.io/api structs.
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

const string = { type: 'string' } as const;
const boolean = { type: 'boolean' } as const;
const any = { type: 'any' } as const;
const list = <S extends Shape>(of: S) => ({ type: 'list', of }) as const;
const stringMap = { type: 'map', of: string } as const;
const struct = <F extends Readonly<Record<string, Shape>>, A extends keyof F & string = never>(
  fields: F,
  always?: readonly A[],
): { readonly type: 'struct'; readonly fields: F; readonly always: readonly NoInfer<A>[] } => ({
  type: 'struct',
  fields,
  always: always ?? [],
});
/** Field names whose contents the rules never read. */
const untyped = <N extends string>(...names: N[]): Record<N, typeof any> =>
  Object.fromEntries(names.map((name) => [name, any])) as Record<N, typeof any>;

const execAction = struct({ command: list(string) });

/** What a lifecycle handler may say to run: the spec's "valid handler" has one of them. */
export const LIFECYCLE_HANDLER_KINDS = ['exec', 'httpGet', 'tcpSocket', 'sleep'] as const;

const lifecycleHandler = struct({ ...untyped(...LIFECYCLE_HANDLER_KINDS), exec: execAction });

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

const ownerReference = struct({ apiVersion: string, kind: string, name: string, uid: string, controller: boolean }, [
  'apiVersion',
  'kind',
  'name',
  'uid',
]);

/** The parts of a pod the injection reads or writes; a pod that breaks these would be broken by a patch. */
export const pod = struct(
  {
    ...untyped('apiVersion', 'kind', 'status'),
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

/**
 * The TypeScript type of a shape: what its ajv schema lets through, and what go-json.ts gives back. Typed fields
 * get their type, the fields Go always writes are required, and every other key is `unknown`, as in the JSON.
 */
export type TypeOf<S> = S extends { readonly type: 'string' }
  ? string
  : S extends { readonly type: 'boolean' }
    ? boolean
    : S extends { readonly type: 'list'; readonly of: infer O }
      ? TypeOf<O>[]
      : S extends { readonly type: 'map'; readonly of: infer O }
        ? Record<string, TypeOf<O>>
        : S extends { readonly type: 'struct'; readonly fields: infer F; readonly always: readonly string[] }
          ? StructOf<F, S['always'][number]>
          : unknown;

/** Any JSON object: the keys a shape does not type ride along as they are. */
export type JsonObject = { [key: string]: unknown };

type StructOf<F, A> = { [K in keyof F & A]: TypeOf<F[K]> } & { [K in Exclude<keyof F, A>]?: TypeOf<F[K]> } & JsonObject;

export type EnvVar = TypeOf<typeof envVar>;
export type VolumeMount = TypeOf<typeof volumeMount>;
export type LifecycleHandler = TypeOf<typeof lifecycleHandler>;
export type Lifecycle = TypeOf<typeof lifecycle>;
export type Probe = TypeOf<typeof probe>;
export type Container = TypeOf<typeof container>;
export type Volume = TypeOf<typeof volume>;
export type OwnerReference = TypeOf<typeof ownerReference>;
export type Pod = TypeOf<typeof pod>;
export type ObjectMeta = Pod['metadata'];
export type PodSpec = Pod['spec'];
/** What one ConfigMap key says a runtime adds, as go-json.ts reads it. Field names are the ones existing clusters use. */
export type RuntimeConfig = TypeOf<typeof runtimeConfig>;
/** The pod's two container lists. */
export type ContainerList = 'containers' | 'initContainers';
/** The pod's two string maps. */
export type MetadataMap = 'labels' | 'annotations';
