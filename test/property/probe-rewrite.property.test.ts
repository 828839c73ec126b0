/**
 * traffic-proxy's health-probe rewrite on generated pods: the pods have the proxy (or not), probes and hooks of
 * every kind on named, numbered and missing ports, and ask for the rewrite (or not). Each pod is admitted twice,
 * once asking for the rewrite and once not, and the two answers may differ only where the rewrite may write.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  injectRuntimes,
  STATUS_ANNOTATION,
  type Container,
  type EnvVar,
  type EnvVarsInjectionPolicy,
  type Pod,
  type RuntimeConfig,
} from '../../src/injection/index.js';
import { reviewAdmission } from '../../src/admission/review.js';
import { InjectionConfigStore } from '../../src/config/injection-config.js';
import { runtimesFromAnnotations } from '../../src/sandbox/runtime-selection.js';
import { AGENT_CONFIG } from '../support/builders.js';
import { decodePatch, reviewFor } from '../support/conformance.js';
import { freezeAll } from '../support/freeze-all.js';
import { propertyRuns, propertyTimeout } from '../support/property-runs.js';
import { applyStrict } from '../support/strict-patch.js';
import { diffPods } from './pod-diff.js';

const RUNS = propertyRuns(5_000);
const REWRITE = 'networking.agents.kruise.io/health-probe-rewrite';
const PROXY_NAME = 'networking.agents.kruise.io/sidecar-proxy';
const PROBERS = 'ISTIO_KUBE_APP_PROBERS';
const PROBES = ['readinessProbe', 'livenessProbe', 'startupProbe'] as const;
const HOOKS = ['preStop', 'postStart'] as const;

const portName = fc.constantFrom('http', 'grpc', 'missing');
const port = fc.oneof(fc.constantFrom(8080, 9090, 15020), portName);
const text = fc.constantFrom('/ready', '/a?b=1&c=<2>', '', '/é\u2028');
const httpGet = fc.record(
  { path: text, port, scheme: fc.constantFrom('HTTP', 'HTTPS'), host: fc.constantFrom('h', '') },
  { requiredKeys: ['port'] },
);
const tcpSocket = fc.record({ port });
const grpc = fc.record(
  { port: fc.constantFrom(9090, 15020), service: fc.constantFrom('', 'svc') },
  { requiredKeys: [] },
);
const exec = fc.record({ command: fc.constant<string[]>(['check']) });
const probe = fc
  .tuple(
    fc.oneof(
      fc.record({ exec }),
      fc.record({ httpGet }),
      fc.record({ tcpSocket }),
      fc.record({ grpc }),
      // What a probe rewritten before looks like; and one no kind of which is set.
      fc.constant({ httpGet: { path: '/app-health/app/readyz', port: 15020 } }),
      fc.constant({ httpGet: null, tcpSocket: { port: 8080 } }),
    ),
    fc.record({ timeoutSeconds: fc.constantFrom(0, 1, 5), periodSeconds: fc.constant(3) }, { requiredKeys: [] }),
  )
  .map(([handler, rest]) => ({ ...handler, ...rest }));
const hook = fc.oneof(
  fc.record({ exec }),
  fc.record({ httpGet }),
  fc.record({ tcpSocket }),
  fc.constant({ sleep: { seconds: 1 } }),
);
const containerArbitrary = (name: string): fc.Arbitrary<Container> =>
  fc.record(
    {
      name: fc.constant(name),
      image: fc.constant('img:1'),
      command: fc.constant<string[]>(['run']),
      ports: fc.array(fc.record({ name: portName, containerPort: fc.constantFrom(8080, 9090, 15020) }), {
        maxLength: 2,
      }),
      readinessProbe: probe,
      livenessProbe: probe,
      startupProbe: probe,
      lifecycle: fc.record({ preStop: hook, postStart: hook }, { requiredKeys: [] }),
    },
    { requiredKeys: ['name', 'image'] },
  );

interface Scenario {
  pod: Pod;
  proxy: string;
  configs: Map<string, RuntimeConfig>;
  runtimes: string[];
  policy: EnvVarsInjectionPolicy;
}

const scenarioArbitrary: fc.Arbitrary<Scenario> = fc
  .record({
    names: fc.uniqueArray(fc.constantFrom('app', 'web', 'w<&>', 'setup'), { minLength: 1, maxLength: 3 }),
    inits: fc.nat(2),
    proxy: fc.constantFrom('istio-proxy', 'envoy'),
    namedInAnnotation: fc.boolean(),
    // Where the proxy comes from: the runtime's template (injected now), the pod (present), or nowhere.
    proxyFrom: fc.constantFrom('template', 'template-init', 'pod', 'none'),
    proxyEnv: fc.constantFrom<EnvVar[]>(
      [],
      [{ name: PROBERS, value: '{"/app-health/gone/livez":{"tcpSocket":{"port":1}}}' }],
    ),
    policy: fc.constantFrom('None' as const, 'Auto' as const),
    agentRuntime: fc.boolean(),
  })
  .chain((s) =>
    fc.tuple(fc.constant(s), fc.tuple(...s.names.map(containerArbitrary))).map(([s, containers]): Scenario => {
      const inits = containers.slice(0, Math.min(s.inits, containers.length - 1));
      const own = containers.slice(inits.length);
      const proxyContainer: Container = { name: s.proxy, image: 'proxy:1', env: s.proxyEnv };
      const template: RuntimeConfig =
        s.proxyFrom === 'template-init' ? { initContainers: [proxyContainer] } : { containers: [proxyContainer] };
      const annotations: Record<string, string> = { [REWRITE]: 'true' };
      if (s.namedInAnnotation) annotations[PROXY_NAME] = s.proxy;
      const name = s.namedInAnnotation ? s.proxy : 'istio-proxy';
      const pod: Pod = JSON.parse(
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'p', annotations },
          spec: {
            containers: s.proxyFrom === 'pod' ? [...own, proxyContainer] : own,
            ...(inits.length > 0 ? { initContainers: inits } : {}),
          },
        }),
      ) as Pod;
      return {
        pod,
        proxy: name,
        configs: new Map([
          ['traffic-proxy', s.proxyFrom === 'none' ? {} : template],
          ['agent-runtime', AGENT_CONFIG],
        ]),
        runtimes: s.agentRuntime ? ['agent-runtime', 'traffic-proxy'] : ['traffic-proxy'],
        policy: s.policy,
      };
    }),
  );

function admit({ configs, runtimes, policy }: Scenario, pod: Pod) {
  return injectRuntimes(pod, {
    runtimes: runtimes.map((name) => ({ name, config: configs.get(name) ?? {} })),
    policy,
    allConfigs: configs,
  });
}

/** The same pod, not asking for the rewrite. */
function withoutAsking(pod: Pod): Pod {
  return { ...pod, metadata: { ...pod.metadata, annotations: { [REWRITE]: 'false' } } };
}

/** Where the rewrite may write: a network probe or hook of a container other than the proxy, and the proxy's env. */
function mayWrite(pod: Pod, proxy: string): string[] {
  const places: string[] = [];
  for (const list of ['initContainers', 'containers'] as const) {
    (pod.spec[list] ?? []).forEach((c, index) => {
      const at = `/spec/${list}/${index}`;
      if (c.name === proxy) return places.push(`${at}/env`);
      for (const name of PROBES) places.push(`${at}/${name}`);
      for (const name of HOOKS) places.push(`${at}/lifecycle/${name}`);
    });
  }
  return places;
}

const APP_HEALTH = expect.stringMatching(/^\/app-health\/.+\/(readyz|livez|startupz)$/) as unknown;
const APP_LIFECYCLE = expect.stringMatching(/^\/app-lifecycle\/.+\/(prestopz|poststartz)$/) as unknown;

const isNetwork = (handler: unknown): boolean =>
  handler !== null &&
  typeof handler === 'object' &&
  ['httpGet', 'tcpSocket', 'grpc'].some((kind) => {
    const value = (handler as Record<string, unknown>)[kind];
    return value !== null && typeof value === 'object';
  });

describe('traffic-proxy health-probe rewrite properties', () => {
  it(
    `for ${RUNS} generated pods: touches only network probes and hooks, and is idempotent`,
    () => {
      fc.assert(
        fc.property(scenarioArbitrary, (scenario) => {
          const { pod, proxy } = scenario;
          for (const config of scenario.configs.values()) freezeAll(config);
          const before = structuredClone(pod);
          const asked = admit(scenario, pod);
          expect(pod).toEqual(before);
          expect(applyStrict(pod, asked.operations)).toEqual(asked.pod);

          // Against the same pod not asking: the differences are the rewrite's, and only where it may write.
          const plain = admit(scenario, withoutAsking(pod)).pod;
          const rewritten = { ...asked.pod, metadata: { ...asked.pod.metadata, annotations: {} } };
          const unasked = { ...plain, metadata: { ...plain.metadata, annotations: {} } };
          const allowed = mayWrite(plain, proxy);
          for (const { path } of diffPods(unasked, rewritten)) {
            expect(
              allowed.some((place) => path === place || path.startsWith(`${place}/`)),
              path,
            ).toBe(true);
          }

          const proxyContainer = [...asked.pod.spec.containers, ...(asked.pod.spec.initContainers ?? [])].find(
            (c) => c.name === proxy,
          );
          const applies = asked.report.probeRewrite !== undefined;
          expect(applies).toBe(proxyContainer !== undefined);
          for (const list of ['initContainers', 'containers'] as const) {
            (plain.spec[list] ?? []).forEach((c, index) => {
              if (c.name === proxy) return;
              const out = asked.pod.spec[list]?.[index];
              for (const name of PROBES) {
                const was = c[name];
                // A network probe asks the proxy's status port at its path; any other stays as it was.
                if (applies && isNetwork(was)) {
                  expect(out?.[name]?.httpGet).toMatchObject({ port: 15020, path: APP_HEALTH });
                  expect(out?.[name]?.tcpSocket).toBeUndefined();
                  expect(out?.[name]?.grpc).toBeUndefined();
                } else {
                  expect(out?.[name]).toEqual(was);
                }
              }
              for (const name of HOOKS) {
                const was = c.lifecycle?.[name];
                if (applies && isNetwork(was)) {
                  expect(out?.lifecycle?.[name]?.httpGet).toMatchObject({ port: 15020, path: APP_LIFECYCLE });
                  expect(out?.lifecycle?.[name]?.tcpSocket).toBeUndefined();
                } else {
                  expect(out?.lifecycle?.[name]).toEqual(was);
                }
              }
            });
          }
          // The proxy has the variable at most once, and what it holds is JSON keyed by the proxy's paths.
          const probers = (proxyContainer?.env ?? []).filter((e) => e.name === PROBERS);
          expect(probers.length).toBeLessThanOrEqual(1);
          for (const key of Object.keys(JSON.parse(probers[0]?.value ?? '{}') as object)) {
            expect(key).toMatch(/^\/app-(health|lifecycle)\/.+\/(readyz|livez|startupz|prestopz|poststartz)$/);
          }
          if (applies) {
            const status = JSON.parse(asked.pod.metadata.annotations?.[STATUS_ANNOTATION] ?? '{}') as {
              healthProbeRewrite?: { proxy: string };
            };
            expect(status.healthProbeRewrite?.proxy).toBe(proxy);
          }

          // Reinvocation: the admitted pod, admitted again, needs no patch.
          const again = admit(scenario, asked.pod);
          expect(again.operations).toEqual([]);
          expect(diffPods(asked.pod, again.pod)).toEqual([]);
        }),
        { numRuns: RUNS },
      );
    },
    propertyTimeout(RUNS),
  );

  it(
    `for ${RUNS} reviews with arbitrary JSON where probes, hooks and ports go: answered, and the patch applies`,
    async () => {
      const anything = fc.jsonValue({ maxDepth: 3 });
      const damaged = fc.record(
        {
          readinessProbe: fc.record({ httpGet: anything, tcpSocket: anything, grpc: anything }, { requiredKeys: [] }),
          livenessProbe: fc.record({ httpGet: fc.record({ port: anything, path: anything, httpHeaders: anything }) }),
          lifecycle: fc.record({
            preStop: fc.record({ tcpSocket: anything }),
            postStart: fc.record({ httpGet: anything }),
          }),
          ports: anything,
        },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(scenarioArbitrary, damaged, async (scenario, parts) => {
          const [first, ...rest] = scenario.pod.spec.containers;
          const annotations = { ...scenario.pod.metadata.annotations, 'agents.kruise.io/runtimes': 'traffic-proxy' };
          const pod: Pod = {
            ...scenario.pod,
            metadata: { ...scenario.pod.metadata, annotations },
            spec: { ...scenario.pod.spec, containers: [{ ...(first as Container), ...parts }, ...rest] },
          };
          const answer = await review(pod);
          if (answer.patch === undefined) return;
          const admitted = applyStrict(pod, decodePatch(answer.patch));
          expect((await review(admitted)).patch).toBeUndefined();
        }),
        { numRuns: RUNS },
      );
    },
    propertyTimeout(RUNS),
  );
});

const store = new InjectionConfigStore();
store.update({ 'traffic-proxy': JSON.stringify({ containers: [{ name: 'istio-proxy', image: 'proxy:1' }] }) });

async function review(pod: Pod): Promise<{ patch?: string }> {
  const outcome = await reviewAdmission(reviewFor(pod), {
    config: () => store.snapshot(),
    selectRuntimes: runtimesFromAnnotations,
  });
  if (outcome.kind !== 'response') throw new Error(outcome.message);
  return outcome.review.response ?? {};
}
