import fc from 'fast-check';
import type { Container, Pod, RuntimeConfig } from '../../src/injection/index.js';

/**
 * Small pools of names and paths, so generated pods and configs collide often: the conflict rules are where
 * injection goes wrong, and random unique names would almost never reach them.
 */
const containerName = fc.constantFrom('main', 'agent-runtime', 'csi-sidecar', 'traffic-proxy', 'worker', 'setup');
const volumeName = fc.constantFrom('envd-volume', 'csi-volume', 'sandbox-env', 'proxy-certs', 'data');
const mountPath = fc.constantFrom('/mnt/envd', '/mnt/csi', '/var/sandbox', '/data', '/tmp');
const envName = fc.constantFrom('ENVD_DIR', 'LOG_LEVEL', 'A', 'B');
// Keys with `/` and `~` exercise JSON-pointer escaping.
const metaKey = fc.constantFrom('team', 'a/b', 'x~y', 'p.io/~1', '~', '/', 'agents.kruise.io/traffic');
const word = fc.string({ maxLength: 6 });
const WRAPPER = ['/bin/bash', '/var/sandbox/run_with_envs.sh'];

const env = fc.record({ name: envName, value: word });
const mount = fc.record({ name: volumeName, mountPath });
const command = fc.oneof(
  fc.array(word, { maxLength: 3 }),
  fc.array(word, { maxLength: 2 }).map((rest) => [...WRAPPER, '--', ...rest]),
);
const handler = fc.oneof(
  fc.constant({}),
  fc.record({ exec: fc.record({ command: fc.array(word, { maxLength: 2 }) }) }),
  fc.constant({ httpGet: { port: 80 } }),
);
const probe = fc.oneof(fc.record({ exec: fc.record({ command }) }), fc.constant({ tcpSocket: { port: 1 } }));

const containerFields = {
  image: fc.constant('img:1'),
  command,
  args: fc.array(word, { maxLength: 2 }),
  env: fc.array(env, { maxLength: 3 }),
  volumeMounts: fc.uniqueArray(mount, { maxLength: 3, selector: (m) => m.mountPath }),
  lifecycle: fc.record({ postStart: handler, preStop: handler }, { requiredKeys: [] }),
  readinessProbe: probe,
  startupProbe: probe,
  livenessProbe: probe,
};

const container = (name: fc.Arbitrary<string>): fc.Arbitrary<Container> =>
  fc.record({ name, ...containerFields }, { requiredKeys: ['name'] });

const stringMap = fc.dictionary(metaKey, word, { maxKeys: 3 });
const volume = fc.record({ name: volumeName, emptyDir: fc.constant({}) });

export const podArbitrary: fc.Arbitrary<Pod> = fc
  .record(
    {
      labels: stringMap,
      annotations: stringMap,
      containers: fc.uniqueArray(container(containerName), { minLength: 1, maxLength: 3, selector: (c) => c.name }),
      initContainers: fc.uniqueArray(container(containerName), { maxLength: 2, selector: (c) => c.name }),
      volumes: fc.uniqueArray(volume, { maxLength: 3, selector: (v) => v.name }),
    },
    { requiredKeys: ['containers'] },
  )
  .filter((p) => {
    // Kubernetes requires container names to be unique across containers and init containers.
    const all = [...p.containers, ...(p.initContainers ?? [])].map((c) => c.name);
    return new Set(all).size === all.length;
  })
  .map(({ labels, annotations, containers, initContainers, volumes }) => {
    const metadata: Pod['metadata'] = { generateName: 'sbx-' };
    if (labels !== undefined) metadata.labels = labels;
    if (annotations !== undefined) metadata.annotations = annotations;
    const spec: Pod['spec'] = { containers };
    if (initContainers !== undefined) spec.initContainers = initContainers;
    if (volumes !== undefined) spec.volumes = volumes;
    return asFromTheWire<Pod>({ apiVersion: 'v1', kind: 'Pod', metadata, spec });
  });

/**
 * fast-check reuses constant objects, so one `{}` can sit in two places of a generated value. A decoded
 * request never shares objects; a JSON round trip gives generated values that same shape.
 */
function asFromTheWire<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

const sidecars = fc.uniqueArray(container(containerName), { maxLength: 2, selector: (c) => c.name });

// As go-json.ts reads a config: the Go struct always writes the name, "" when the config has none.
const mainContainerConfig = fc.record(
  {
    name: fc.constant(''),
    env: fc.array(env, { maxLength: 3 }),
    volumeMounts: fc.array(mount, { maxLength: 3 }),
    lifecycle: fc.record({ postStart: handler }, { requiredKeys: [] }),
  },
  { requiredKeys: ['name'] },
);

const mainRuntimeConfig: fc.Arbitrary<RuntimeConfig> = fc.record(
  { mainContainer: mainContainerConfig, csiSidecar: sidecars, volume: fc.array(volume, { maxLength: 3 }) },
  { requiredKeys: [] },
);

const genericConfig: fc.Arbitrary<RuntimeConfig> = fc.record(
  {
    labels: stringMap,
    annotations: stringMap,
    initContainers: fc.uniqueArray(container(containerName), { maxLength: 1, selector: (c) => c.name }),
    containers: fc.uniqueArray(container(containerName), { maxLength: 2, selector: (c) => c.name }),
    volume: fc.uniqueArray(volume, { maxLength: 2, selector: (v) => v.name }),
  },
  { requiredKeys: [] },
);

export const configsArbitrary = fc
  .record({ agent: mainRuntimeConfig, csi: mainRuntimeConfig, generic: genericConfig })
  .map(
    ({ agent, csi, generic }) =>
      new Map<string, RuntimeConfig>([
        ['agent-runtime', asFromTheWire(agent)],
        ['csi', asFromTheWire(csi)],
        ['gen/x~y', asFromTheWire(generic)],
      ]),
  );

export const runtimesArbitrary = fc.shuffledSubarray(['agent-runtime', 'csi', 'gen/x~y']);
export const policyArbitrary = fc.constantFrom('None' as const, 'Auto' as const);
export const postStartConflictArbitrary = fc.constantFrom('skip' as const, 'merge' as const);
