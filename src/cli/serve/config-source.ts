/**
 * Where the injection config and each pod's runtimes come from.
 *
 * - Local mode: a ConfigMap manifest file, watched; runtimes from the pod's annotations.
 * - Cluster mode: a cached watch of the ConfigMap; runtimes from the pod's owning Sandbox (cached watch,
 *   GET on a miss). Admissions never call the API for the config.
 */
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { ReviewDeps } from '../../admission/review.js';
import type { ServeOptions } from './options.js';
import { STARTUP_ERRORS } from '../../errors/index.js';
import type { ServerMetrics } from '../../server/metrics.js';
import type { WatchDirectories } from '../../file-watch/directory-watch.js';
import { logConfigProblems, startConfigFileWatch, type ConfigLoadResult } from '../../config/config-file-watch.js';
import type { ConfigUpdateReport, InjectionConfigStore } from '../../config/injection-config.js';
import type { KubeClients } from '../../kube-client/clients.js';
import { runtimesFromAnnotations } from '../../sandbox/runtime-selection.js';
import type { Clock } from '../../time/clock.js';
import { errorCode } from '../../errors/error-message.js';
import type { ServeTarget } from './cluster.js';
import type { Lifetime } from './lifetime.js';
import { StartupError } from './startup-failure.js';

export interface ConfigSourceDeps {
  options: Readonly<ServeOptions>;
  target: ServeTarget;
  store: InjectionConfigStore;
  /** Watches the config file's directory in local mode. */
  watch: WatchDirectories;
  metrics: ServerMetrics;
  logger: Logger;
  lifetime: Lifetime;
  /** The cluster watches' clock. */
  clock: Clock;
}

/** Starts the sources of the mode in use; resolves once the config file has been read (local mode). */
export async function startConfigSource(deps: ConfigSourceDeps): Promise<ReviewDeps> {
  return deps.target.mode === 'local' ? startLocalSources(deps) : startClusterSources(deps, deps.target.kube);
}

async function startLocalSources({
  options,
  store,
  watch,
  metrics,
  logger,
  lifetime,
}: ConfigSourceDeps): Promise<ReviewDeps> {
  await requireConfigDirectory(options.configFile);
  const configWatch = await startConfigFileWatch({
    file: options.configFile,
    store,
    watch,
    logger,
    onResult: (result) => recordConfigLoad(metrics, result),
  });
  lifetime.onClose(() => configWatch.close());
  if (options.trustedCreators !== undefined) {
    logger.warn(
      '--trusted-creators has no effect in local mode: runtimes come from pod annotations, whoever wrote them',
    );
  }
  return { config: () => store.snapshot(), selectRuntimes: (pod) => runtimesFromAnnotations(pod) };
}

async function startClusterSources(
  { options, store, metrics, logger, lifetime, clock }: ConfigSourceDeps,
  kube: KubeClients,
): Promise<ReviewDeps> {
  // Imported here: @kubernetes/client-node alone is a large share of the RSS, which a local run has no use for.
  const { watchInjectionConfigMap } = await import('../../config/configmap-watch.js');
  const { runtimesFromOwner, watchSandboxes } = await import('../../admission/sandbox-runtimes.js');
  // Unset keeps the behaviour from before the flag existed, so a run outside the manifests (a laptop with a
  // kubeconfig) is not broken by it; the manifests set it, and the warning says what unset means.
  const trustedCreators = options.trusted;
  if (trustedCreators === undefined) {
    logger.warn(
      'every pod creator is trusted: any pod naming a Sandbox as its controller owner gets its runtimes (see --trusted-creators)',
    );
  } else {
    logger.info(
      { users: [...trustedCreators.users], groups: [...trustedCreators.groups] },
      'only trusted creators may create pods owned by a Sandbox',
    );
  }
  const configWatch = watchInjectionConfigMap({
    clients: kube,
    namespace: options.configNamespace,
    name: options.configName,
    store,
    onApplied: (report, event) => recordConfigMapChange(logger, metrics, store.configMapName, report, event),
    onError: (error, retryInMs) => {
      metrics.configReload('failure', undefined);
      logger.warn({ err: error, retryInMs }, 'injection ConfigMap watch failed; restarting');
    },
    clock,
  });
  lifetime.onClose(() => configWatch.stop());
  const sandboxes = watchSandboxes(kube, {
    onError: (error, retryInMs) => logger.warn({ err: error, retryInMs }, 'Sandbox watch failed; restarting'),
    clock,
  });
  lifetime.onClose(() => sandboxes.watch.stop());
  return {
    config: () => store.snapshot(),
    selectRuntimes: (pod, request) =>
      runtimesFromOwner(pod, request, sandboxes.lookup, options.allowAnnotationRuntimes, trustedCreators),
  };
}

/**
 * A missing file is a ConfigMap that does not exist, but its directory must be there: it is watched, so the file
 * can appear later (an optional mount). Said here in the flag's words, not as the watch's ENOENT.
 */
async function requireConfigDirectory(file: string): Promise<void> {
  const dir = dirname(file);
  const problem = await stat(dir).then(
    (stats) => (stats.isDirectory() ? undefined : 'is not a directory'),
    (error: unknown) => {
      if (errorCode(error) === 'ENOENT') return 'does not exist';
      throw error;
    },
  );
  if (problem !== undefined) {
    throw new StartupError(
      STARTUP_ERRORS.configDirectoryMissing(file, dir, problem),
      'create it, or point --config-file (SANDBOX_INJECTOR_CONFIG_FILE) into a directory that exists: it is watched for the file',
    );
  }
}

function recordConfigLoad(metrics: ServerMetrics, result: ConfigLoadResult): void {
  if (result.kind === 'loaded') metrics.configReload('success', result.invalidKeys);
  else if (result.kind === 'failed') metrics.configReload('failure', undefined);
}

function recordConfigMapChange(
  logger: Logger,
  metrics: ServerMetrics,
  configMap: string,
  report: ConfigUpdateReport,
  event: string,
): void {
  metrics.configReload('success', report.invalidKeys);
  logger.info({ configMap, event, invalidKeys: report.invalidKeys.length }, 'injection config applied');
  logConfigProblems(logger, { configMap }, report);
}
