/**
 * deliver-env's pool pods, put together: the injection ConfigMap's watch (the same store and parsing as the
 * webhook's), the census that judges each unclaimed Sandbox's pod as its Sandbox or pods change, the Events and
 * metrics, and, with --replace-pool-pods, the replacement: the parts beside this file, put together.
 *
 * The ConfigMap's watch is not part of /readyz: until it has listed, no pod is judged (and none replaced), and
 * a deliver-env whose RBAC predates reading it still delivers claims, saying in its log why the watch fails.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { SandboxCache } from '../controller/controller.js';
import type { EventQueue } from '../controller/event-queue.js';
import type { LeaderTerm } from '../leadership/leader-election.js';
import { PoolPodCensus } from './pool-pod-census.js';
import { poolPodMetrics } from './pool-pod-metrics.js';
import { PoolPodReporter } from './pool-pod-reporter.js';
import type { PoolSandbox } from './pool-pods.js';
import { PoolReplacement, type ReplacementApi, type ReplacementSettings } from './pool-replacement.js';
import { SANDBOX_GROUP, SANDBOX_PLURAL, SANDBOX_VERSION } from '../../sandbox/api.js';
import { InjectionConfigStore } from '../../config/injection-config.js';
import type { KubeClients } from '../../kube-client/clients.js';
import { watchInjectionConfigMap } from '../../config/configmap-watch.js';
import type { Clock } from '../../time/clock.js';
import { errorLine } from '../../errors/error-message.js';

export interface PoolPodsDeps {
  /** The injection ConfigMap, `namespace` and `name`. */
  configMap: { namespace: string; name: string };
  allowHostNetwork: boolean;
  /** Undefined: pool pods are judged and reported, never replaced. */
  replacement: ReplacementSettings | undefined;
  clients: KubeClients;
  cache: SandboxCache;
  registry: Registry;
  events: EventQueue;
  logger: Logger;
  clock: Clock;
  identity: string;
}

export interface PoolPods {
  /** The Sandbox `key` or one of its pods changed. */
  changed(key: string): void;
  /** A term began or ended (as the controller's). */
  setTerm(term: LeaderTerm | undefined): void;
  stop(): Promise<void>;
}

export function startPoolPods(deps: PoolPodsDeps): PoolPods {
  const { configMap, clients, logger, clock } = deps;
  const store = new InjectionConfigStore(`${configMap.namespace}/${configMap.name}`, clock);
  let listed = false;
  const census = new PoolPodCensus({
    cache: deps.cache,
    config: () => (listed ? store.snapshot() : undefined),
    settings: { allowHostNetwork: deps.allowHostNetwork },
  });
  const settings = deps.replacement;
  const replacement =
    settings === undefined
      ? undefined
      : new PoolReplacement({
          settings,
          census,
          api: replacementApi(clients),
          clock,
          report: (report) => reporter.replacement(report),
        });
  const metrics = poolPodMetrics(deps.registry, {
    states: () => census.figures(),
    replacement: () => replacement?.figures() ?? { inFlight: 0, stoppedPools: 0 },
  });
  const reporter = new PoolPodReporter({
    logger,
    metrics,
    core: clients.core,
    identity: deps.identity,
    events: deps.events,
    clock,
  });
  census.listen((key, before, after) => {
    reporter.judged(key, after);
    replacement?.observe(key, before, after);
  });
  const watch = watchInjectionConfigMap({
    clients,
    namespace: configMap.namespace,
    name: configMap.name,
    store,
    onApplied: (report, event) => {
      listed = true;
      logger.info(
        { configMap: store.configMapName, event, invalidKeys: report.invalidKeys.length },
        'injection config read: pool pods judged against it',
      );
      census.judgeAll();
      replacement?.configChanged();
    },
    onError: (error, retryInMs) =>
      logger.warn(
        { watch: 'injection ConfigMap', retryInMs, err: { message: errorLine(error) } },
        'watch failed; restarting',
      ),
    clock,
  });
  if (settings !== undefined) {
    logger.info(
      {
        states: [...settings.states],
        maxAtOnce: settings.maxAtOnce,
        maxPerPool:
          settings.maxPerPool.kind === 'percent' ? `${settings.maxPerPool.percent}%` : settings.maxPerPool.count,
        readyTimeoutMs: settings.readyTimeoutMs,
      },
      'replacing unclaimed pool pods',
    );
  }
  return {
    changed: (key) => census.changed(key),
    setTerm(term) {
      reporter.setLeading(term !== undefined, census.all());
      replacement?.setTerm(term);
    },
    stop: () => watch.stop(),
  };
}

/** The replacement's two calls: a Sandbox read from the API server, and a pod delete with preconditions. */
function replacementApi(clients: KubeClients): ReplacementApi {
  return {
    async readSandbox(namespace, name) {
      try {
        return (await clients.custom.getNamespacedCustomObject({
          group: SANDBOX_GROUP,
          version: SANDBOX_VERSION,
          namespace,
          plural: SANDBOX_PLURAL,
          name,
        })) as PoolSandbox;
      } catch (error) {
        if ((error as { code?: unknown }).code === 404) return undefined;
        throw error;
      }
    },
    async deletePod(namespace, name, uid, resourceVersion) {
      try {
        await clients.core.deleteNamespacedPod({ name, namespace, body: { preconditions: { uid, resourceVersion } } });
        return 'deleted';
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code === 404) return 'gone';
        if (code === 409) return 'changed';
        throw error;
      }
    },
  };
}
