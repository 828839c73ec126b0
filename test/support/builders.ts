import {
  injectRuntimes,
  type Container,
  type EnvVarsInjectionPolicy,
  type Pod,
  type PostStartConflict,
  type RuntimeConfig,
} from '../../src/injection/index.js';

export const AGENT_CONFIG: RuntimeConfig = {
  mainContainer: {
    name: '',
    env: [
      { name: 'ENVD_DIR', value: '/mnt/envd' },
      { name: 'RUNTIME', value: 'agent-runtime' },
    ],
    volumeMounts: [{ name: 'envd-volume', mountPath: '/mnt/envd' }],
    lifecycle: { postStart: { exec: { command: ['bash', '/mnt/envd/envd-run.sh'] } } },
  },
  csiSidecar: [
    {
      name: 'agent-runtime',
      image: 'agent-runtime:1',
      restartPolicy: 'Always',
      volumeMounts: [{ name: 'envd-volume', mountPath: '/mnt/envd' }],
    },
  ],
  volume: [{ name: 'envd-volume', emptyDir: {} }],
};

export const CSI_CONFIG: RuntimeConfig = {
  mainContainer: {
    name: '',
    env: [
      { name: 'CSI_MOUNT_ROOT', value: '/mnt/csi' },
      { name: 'LOG_LEVEL', value: 'info' },
    ],
    volumeMounts: [{ name: 'csi-volume', mountPath: '/mnt/csi' }],
    lifecycle: { postStart: { exec: { command: ['echo', 'ignored'] } } },
  },
  csiSidecar: [{ name: 'csi-sidecar', image: 'csi:1', restartPolicy: 'Always' }],
  volume: [
    { name: 'csi-volume', emptyDir: {} },
    { name: 'csi-socket', emptyDir: { medium: 'Memory' } },
  ],
};

export const PROXY_CONFIG: RuntimeConfig = {
  labels: { 'agents.kruise.io/traffic': 'proxied' },
  annotations: { 'proxy.example.com/config~v2': 'on' },
  initContainers: [{ name: 'proxy-init', image: 'proxy-init:1' }],
  containers: [{ name: 'traffic-proxy', image: 'proxy:2', command: ['proxy'] }],
  volume: [{ name: 'proxy-certs', emptyDir: {} }],
};

export const CONFIGS = new Map<string, RuntimeConfig>([
  ['agent-runtime', AGENT_CONFIG],
  ['csi', CSI_CONFIG],
  ['traffic-proxy', PROXY_CONFIG],
]);

export function pod(containers: Container[], extra: Partial<Pod['spec']> = {}, metadata: Pod['metadata'] = {}): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', ...metadata }, spec: { containers, ...extra } };
}

export function inject(
  input: Pod,
  runtimes: string[],
  policy: EnvVarsInjectionPolicy = 'None',
  configs: ReadonlyMap<string, RuntimeConfig> = CONFIGS,
  wrapperImage?: string,
  postStartConflict?: PostStartConflict,
): ReturnType<typeof injectRuntimes> {
  return injectRuntimes(input, {
    runtimes: runtimes.map((name) => {
      const config = configs.get(name);
      if (config === undefined) throw new Error(`test config ${name} missing`);
      return { name, config };
    }),
    policy,
    allConfigs: configs,
    ...(wrapperImage === undefined ? {} : { wrapper: { image: wrapperImage, command: ['install', '/var/sandbox'] } }),
    postStartConflict,
  });
}
