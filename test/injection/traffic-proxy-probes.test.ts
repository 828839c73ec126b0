import { describe, expect, it } from 'vitest';
import * as say from '../../src/injection/auto-warnings.js';
import {
  injectRuntimes,
  STATUS_ANNOTATION,
  type Container,
  type EnvVarsInjectionPolicy,
  type Pod,
  type RuntimeConfig,
} from '../../src/injection/index.js';
import { noProxyWarning } from '../../src/injection/traffic-proxy-probes.js';
import { AGENT_CONFIG } from '../support/builders.js';
import { applyStrict } from '../support/strict-patch.js';

const REWRITE = 'networking.agents.kruise.io/health-probe-rewrite';
const PROXY_NAME = 'networking.agents.kruise.io/sidecar-proxy';
const PROBERS = 'ISTIO_KUBE_APP_PROBERS';

const proxy = (name = 'istio-proxy'): Container => ({ name, image: 'proxy:1' });
/** traffic-proxy's config: the proxy container, and the annotations it adds to the pod. */
const proxyConfig = (name = 'istio-proxy', annotations: Record<string, string> = {}): RuntimeConfig => ({
  annotations,
  containers: [proxy(name)],
});

function run(
  containers: Container[],
  {
    annotations = { [REWRITE]: 'true' },
    initContainers,
    config = proxyConfig(),
    runtimes = ['traffic-proxy'],
    policy = 'None',
  }: {
    annotations?: Record<string, string>;
    initContainers?: Container[];
    config?: RuntimeConfig;
    runtimes?: string[];
    policy?: EnvVarsInjectionPolicy;
  } = {},
) {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', annotations },
    spec: { containers, ...(initContainers === undefined ? {} : { initContainers }) },
  };
  const configs = new Map<string, RuntimeConfig>([
    ['traffic-proxy', config],
    ['agent-runtime', AGENT_CONFIG],
  ]);
  const result = injectRuntimes(pod, {
    runtimes: runtimes.map((name) => ({ name, config: configs.get(name) ?? {} })),
    policy,
    allConfigs: configs,
  });
  expect(applyStrict(pod, result.operations)).toEqual(result.pod);
  return result;
}

const container = (pod: Pod, name: string): Container | undefined =>
  [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((c) => c.name === name);
const probersOf = (pod: Pod, name = 'istio-proxy'): (string | undefined)[] =>
  (container(pod, name)?.env ?? []).filter((e) => e.name === PROBERS).map((e) => e.value);
const statusOf = (pod: Pod): Record<string, unknown> =>
  JSON.parse(pod.metadata.annotations?.[STATUS_ANNOTATION] ?? 'null') as Record<string, unknown>;

const app = (extra: Partial<Container> = {}): Container => ({ name: 'app', image: 'app:1', ...extra });
const at = (path: string, port: number | string = 15020) => ({ httpGet: { path, port } });

describe('when the rewrite applies', () => {
  const probed = app({ readinessProbe: { httpGet: { path: '/ready', port: 8080 } } });

  it.each([
    ['the annotation is absent', {}],
    ['the annotation is "True"', { [REWRITE]: 'True' }],
    ['the annotation is "false"', { [REWRITE]: 'false' }],
    ['the annotation is " true"', { [REWRITE]: ' true' }],
  ])('not when %s', (_, annotations) => {
    const { pod, report } = run([probed], { annotations });
    expect(pod.spec.containers[0]).toEqual(probed);
    expect(probersOf(pod)).toEqual([]);
    expect(report.probeRewrite).toBeUndefined();
    expect(statusOf(pod)).not.toHaveProperty('healthProbeRewrite');
  });

  it('not when traffic-proxy is not in the pod: asked for nothing of it, or skipped for a conflict', () => {
    const own = proxy();
    const notAsked = run([probed, own], { runtimes: ['agent-runtime'] });
    expect(notAsked.pod.spec.containers[0]?.readinessProbe).toEqual(probed.readinessProbe);
    expect(probersOf(notAsked.pod)).toEqual([]);
    // The pod has an istio-proxy of its own: traffic-proxy is skipped, and its proxy is not ours to use.
    const skipped = run([probed, { ...own, image: 'other:1' }]);
    expect(skipped.report.skipped.map((s) => s.reason)).toEqual(['container-name-conflict']);
    expect(skipped.pod.spec.containers[0]).toEqual(probed);
    expect(probersOf(skipped.pod)).toEqual([]);
  });

  it('with traffic-proxy injected now, present, or injected by an earlier admission', () => {
    const now = run([probed]);
    const present = run([probed, proxy()]);
    const earlier = run([probed, proxy()], {
      annotations: {
        [REWRITE]: 'true',
        [STATUS_ANNOTATION]: '{"injected":["traffic-proxy"],"present":[],"skipped":[],"wrapped":[]}',
      },
    });
    for (const { pod } of [now, present, earlier]) {
      expect(pod.spec.containers[0]?.readinessProbe).toEqual(at('/app-health/app/readyz'));
      expect(probersOf(pod)).toEqual(['{"/app-health/app/readyz":{"httpGet":{"path":"/ready","port":8080}}}']);
    }
    expect(present.report.present).toEqual(['traffic-proxy']);
  });

  it("when the runtime's own annotations ask for it", () => {
    const { pod } = run([probed], { annotations: {}, config: proxyConfig('istio-proxy', { [REWRITE]: 'true' }) });
    expect(pod.spec.containers[0]?.readinessProbe).toEqual(at('/app-health/app/readyz'));
  });
});

describe('the proxy', () => {
  const probed = app({ livenessProbe: { tcpSocket: { port: 8080 } } });

  it('is the container the annotation names, or istio-proxy when it names none', () => {
    const named = run([probed], {
      annotations: { [REWRITE]: 'true', [PROXY_NAME]: 'envoy' },
      config: proxyConfig('envoy'),
    });
    expect(probersOf(named.pod, 'envoy')).toHaveLength(1);
    expect(named.report.probeRewrite?.proxy).toBe('envoy');
    const empty = run([probed], { annotations: { [REWRITE]: 'true', [PROXY_NAME]: '' } });
    expect(probersOf(empty.pod)).toHaveLength(1);
  });

  it('may be an init container (a native sidecar), and keeps its own probes', () => {
    const sidecar = { ...proxy(), restartPolicy: 'Always', readinessProbe: { httpGet: { path: '/ok', port: 15021 } } };
    const { pod } = run([probed], { config: { initContainers: [sidecar] } });
    expect(container(pod, 'istio-proxy')?.readinessProbe).toEqual(sidecar.readinessProbe);
    expect(probersOf(pod)).toEqual(['{"/app-health/app/livez":{"tcpSocket":{"port":8080}}}']);
  });

  it('missing: nothing changes, and a warning says so', () => {
    const { pod, report } = run([probed], {
      annotations: { [REWRITE]: 'true', [PROXY_NAME]: 'envoy' },
    });
    expect(pod.spec.containers[0]).toEqual(probed);
    expect(report.warnings).toEqual([noProxyWarning('envoy')]);
    expect(noProxyWarning('envoy')).toBe(
      'traffic-proxy: health probes not rewritten, the pod has no proxy container "envoy"',
    );
    expect(report.probeRewrite).toBeUndefined();
  });
});

describe('each probe and handler', () => {
  const probes = ['readinessProbe', 'livenessProbe', 'startupProbe'] as const;
  const paths = { readinessProbe: 'readyz', livenessProbe: 'livez', startupProbe: 'startupz' };

  it.each([
    ['httpGet', { httpGet: { path: '/h', port: 8080 } }, '{"httpGet":{"path":"/h","port":8080}}'],
    ['tcpSocket', { tcpSocket: { port: 8080 } }, '{"tcpSocket":{"port":8080}}'],
    ['grpc', { grpc: { port: 9090 } }, '{"grpc":{"port":9090,"service":null}}'],
  ])('a %s probe asks the proxy, which asks the app as the probe did', (_, handler, prober) => {
    for (const name of probes) {
      const { pod, report } = run([app({ [name]: { ...handler, periodSeconds: 7 } })]);
      const path = `/app-health/app/${paths[name]}`;
      expect(pod.spec.containers[0]?.[name]).toEqual({ ...at(path), periodSeconds: 7 });
      expect(probersOf(pod)).toEqual([`{"${path}":${prober}}`]);
      expect(report.probeRewrite?.probes).toEqual([{ container: 'app', probe: name }]);
    }
  });

  it.each([
    ['httpGet', { httpGet: { path: '/h', port: 8080 } }, '{"httpGet":{"path":"/h","port":8080}}'],
    ['tcpSocket', { tcpSocket: { port: 8080 } }, '{"tcpSocket":{"port":8080}}'],
  ])('a %s preStop or postStart hook too', (_, handler, prober) => {
    for (const [name, path] of [
      ['preStop', '/app-lifecycle/app/prestopz'],
      ['postStart', '/app-lifecycle/app/poststartz'],
    ] as const) {
      const { pod } = run([app({ lifecycle: { [name]: handler } })]);
      expect(pod.spec.containers[0]?.lifecycle?.[name]).toEqual(at(path));
      expect(probersOf(pod)).toEqual([`{"${path}":${prober}}`]);
    }
  });

  it('exec probes, exec and sleep hooks stay as they are, and make no prober', () => {
    const own = app({
      readinessProbe: { exec: { command: ['ready'] } },
      lifecycle: { preStop: { sleep: { seconds: 5 } }, postStart: { exec: { command: ['hi'] } } },
    });
    const { pod, report } = run([own]);
    expect(pod.spec.containers[0]).toEqual(own);
    expect(probersOf(pod)).toEqual([]);
    expect(report.probeRewrite).toEqual({ proxy: 'istio-proxy', probes: [] });
  });

  it('HTTPS becomes HTTP, host and headers stay; the prober keeps the scheme', () => {
    const headers = [{ name: 'X-Probe', value: '1' }];
    const { pod } = run([
      app({
        readinessProbe: { httpGet: { path: '/r', port: 8443, scheme: 'HTTPS', host: 'h', httpHeaders: headers } },
      }),
    ]);
    expect(pod.spec.containers[0]?.readinessProbe).toEqual({
      httpGet: { path: '/app-health/app/readyz', port: 15020, scheme: 'HTTP', host: 'h', httpHeaders: headers },
    });
    expect(probersOf(pod)).toEqual([
      '{"/app-health/app/readyz":{"httpGet":{"path":"/r","port":8443,"host":"h","scheme":"HTTPS",' +
        '"httpHeaders":[{"name":"X-Probe","value":"1"}]}}}',
    ]);
  });

  it('a named port is resolved from the container; a missing one leaves the prober out, not the rewrite', () => {
    const { pod } = run([
      app({
        ports: [{ name: 'http', containerPort: 8080 }],
        readinessProbe: { httpGet: { path: '/r', port: 'http' } },
        livenessProbe: { tcpSocket: { port: 'nope' } },
      }),
    ]);
    expect(pod.spec.containers[0]?.livenessProbe).toEqual(at('/app-health/app/livez'));
    expect(probersOf(pod)).toEqual(['{"/app-health/app/readyz":{"httpGet":{"path":"/r","port":8080}}}']);
  });

  it('a probe already at the status port is rewritten to its path but left out of the probers', () => {
    const { pod } = run([app({ readinessProbe: at('/mine') })]);
    expect(pod.spec.containers[0]?.readinessProbe).toEqual(at('/app-health/app/readyz'));
    expect(probersOf(pod)).toEqual([]);
  });
});

describe('ISTIO_KUBE_APP_PROBERS', () => {
  it("is, byte for byte, what upstream's Go code writes for the same pod", () => {
    // The value below is what upstream's ApplyHealthProbeRewrite writes for this pod (run against it): keys in
    // Go's map order, fields in struct order, <, > and & escaped, named ports as numbers, grpc's service kept.
    const { pod } = run(
      [
        app({
          ports: [
            { name: 'http', containerPort: 8080 },
            { name: 'grpc', containerPort: 9090 },
          ],
          readinessProbe: {
            httpGet: {
              path: '/ready?a=1&b=<2>',
              port: 'http',
              scheme: 'HTTPS',
              host: 'app.local',
              httpHeaders: [{ name: 'X-Probe', value: '1' }],
            },
            timeoutSeconds: 3,
            periodSeconds: 5,
          },
          livenessProbe: { grpc: { port: 9090, service: 'health' }, timeoutSeconds: 1 },
          startupProbe: { exec: { command: ['ready'] } },
          lifecycle: {
            preStop: { tcpSocket: { port: 8080 } },
            postStart: { httpGet: { path: '/started', port: 'missing' } },
          },
        }),
        { ...proxy(), env: [{ name: 'A', value: '1' }] },
      ],
      {
        initContainers: [
          {
            name: 'setup',
            image: 's:1',
            startupProbe: { tcpSocket: { port: 'db' } },
            ports: [{ name: 'db', containerPort: 5432 }],
          },
        ],
      },
    );
    expect(container(pod, 'istio-proxy')?.env).toEqual([
      { name: 'A', value: '1' },
      {
        name: PROBERS,
        value:
          '{"/app-health/app/livez":{"grpc":{"port":9090,"service":"health"},"timeoutSeconds":1},' +
          '"/app-health/app/readyz":{"httpGet":{"path":"/ready?a=1\\u0026b=\\u003c2\\u003e","port":8080,' +
          '"host":"app.local","scheme":"HTTPS","httpHeaders":[{"name":"X-Probe","value":"1"}]},"timeoutSeconds":3},' +
          '"/app-health/setup/startupz":{"tcpSocket":{"port":5432}},' +
          '"/app-lifecycle/app/prestopz":{"tcpSocket":{"port":8080}}}',
      },
    ]);
  });

  it('is merged into the one the proxy already has, never added twice', () => {
    const earlier = '{"/app-health/web/readyz":{"tcpSocket":{"port":81}},"/app-health/app/readyz":{"grpc":{"port":1}}}';
    const { pod } = run([
      app({ readinessProbe: { tcpSocket: { port: 80 } } }),
      { ...proxy(), env: [{ name: PROBERS, value: earlier }] },
    ]);
    expect(probersOf(pod)).toEqual([
      '{"/app-health/app/readyz":{"tcpSocket":{"port":80}},"/app-health/web/readyz":{"tcpSocket":{"port":81}}}',
    ]);
  });
});

describe('reinvocation', () => {
  it('changes nothing, and records the same status', () => {
    const first = run(
      [
        app({
          readinessProbe: { httpGet: { path: '/r', port: 8080, scheme: 'HTTPS' } },
          livenessProbe: { tcpSocket: { port: 8080 } },
          lifecycle: { preStop: { httpGet: { path: '/stop', port: 8080 } } },
        }),
      ],
      { policy: 'Auto', runtimes: ['agent-runtime', 'traffic-proxy'] },
    );
    const status = statusOf(first.pod);
    expect(status.healthProbeRewrite).toEqual({
      proxy: 'istio-proxy',
      probes: ['app/readinessProbe', 'app/livenessProbe', 'app/preStop'],
    });
    const again = injectRuntimes(first.pod, {
      runtimes: [
        { name: 'agent-runtime', config: AGENT_CONFIG },
        { name: 'traffic-proxy', config: proxyConfig() },
      ],
      policy: 'Auto',
    });
    expect(again.operations).toEqual([]);
    expect(probersOf(again.pod)).toHaveLength(1);
  });
});

describe('with Auto', () => {
  it('exec probes are still wrapped; a rewritten network probe is advised on as going via the proxy', () => {
    const { pod, report } = run(
      [
        app({
          command: ['serve'],
          readinessProbe: { tcpSocket: { port: 8080 } },
          livenessProbe: { exec: { command: ['alive'] } },
        }),
      ],
      { policy: 'Auto', runtimes: ['agent-runtime', 'traffic-proxy'] },
    );
    const own = pod.spec.containers[0];
    expect(own?.livenessProbe).toEqual({
      exec: { command: ['/bin/bash', '/var/sandbox/run_with_envs.sh', '--probe', '--', 'alive'] },
    });
    expect(own?.readinessProbe).toEqual(at('/app-health/app/readyz'));
    expect(report.wrapped).toEqual(['app']);
    expect(report.advice).toEqual([say.readinessProbeWarning('app', say.VIA_PROXY)]);
    expect(report.advice[0]).toBe(
      'Auto: not Ready until claimed, pool never fills: "app" readinessProbe via proxy; use an exec probe',
    );
  });
});
