/**
 * `sandbox-injector serve`: the process edge. Reads options, makes or loads the certificate, starts the
 * config and certificate watchers, the webhook and the metrics listener, then waits for SIGTERM/SIGINT and
 * drains. Everything it starts is handed in to the app and watchers, which know nothing of signals or env.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import type { ReviewDeps } from '../admission/review.js';
import {
  injectionSettings,
  OptionsError,
  parseServeOptions,
  serveUsage,
  tlsPolicyOf,
  transportLimits,
  type ServeOptions,
} from '../config.js';
import { buildApp } from '../server/app.js';
import { createMetrics, type ServerMetrics } from '../server/metrics.js';
import { startMetricsServer } from '../server/metrics-server.js';
import { loadTlsMaterial, httpsServerOptions, type TlsFiles } from '../server/tls/material.js';
import { startTlsReloader, type TlsReloadResult } from '../server/tls/reloader.js';
import { ensureSelfSignedCertificates } from '../server/tls/self-signed.js';
import { directoryWatcher, systemTimers } from '../server/watch.js';
import { logConfigProblems, startConfigFileWatch, type ConfigLoadResult } from '../sources/config-file-watch.js';
import { InjectionConfigStore, type ConfigUpdateReport } from '../sources/injection-config.js';
// Cluster-mode modules are imported where used: @kubernetes/client-node alone costs ~70 MiB of RSS, which a
// local run (npm start, the benchmark) has no use for.
import type { KubeClients } from '../sources/kube/clients.js';
import { runtimesFromAnnotations } from '../sources/pod-annotations.js';

/** Several events arrive per Kubernetes symlink swap; wait for the burst to end before reading. */
const WATCH_DEBOUNCE_MS = 250;
/** Safety net for volumes where directory events are lost; reloads compare bytes, so this is cheap. */
const WATCH_RESYNC_MS = 60_000;
/** A pair caught half-written is read again this many times, this far apart, before the change is dropped. */
const TLS_RELOAD_ATTEMPTS = 5;
const TLS_RELOAD_RETRY_MS = 400;
/**
 * While draining, idle connections not used since the drain began are closed this often (see Connections
 * in server/transport.ts): one whose answer was already on its way at SIGTERM lacks `Connection: close`.
 */
const IDLE_SWEEP_MS = 100;

type Stop = { signal: NodeJS.Signals };

export async function serveCommand(argv: string[]): Promise<number> {
  let options: Readonly<ServeOptions>;
  try {
    const parsed = parseServeOptions(argv, process.env);
    if (parsed.kind === 'help') {
      process.stdout.write(serveUsage());
      return 0;
    }
    options = parsed.options;
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error;
    process.stderr.write(`sandbox-injector serve: ${error.message}\n(see sandbox-injector serve --help)\n`);
    return 2;
  }

  // Asynchronous writes keep the write syscall off the event loop, and lines logged while one write is in
  // flight leave in the next one, so under load many admission lines share a syscall. Nothing waits in a
  // buffer: at low traffic each line is written at once. The process exits by returning, never by
  // process.exit(), so writes still in flight complete.
  const logger = pino({ level: options.logLevel, base: { pid: process.pid } }, pino.destination({ sync: false }));
  try {
    return await run(options, logger);
  } catch (error) {
    logger.fatal({ err: error }, 'cannot serve');
    return 1;
  } finally {
    logger.flush();
  }
}

async function run(options: Readonly<ServeOptions>, logger: Logger): Promise<number> {
  // Started resources, closed in reverse order whichever way this function leaves.
  const closers: (() => Promise<void>)[] = [];
  const stopSignals = listenForStopSignals();
  try {
    const kube = await clusterClients(options, logger);
    const tlsFiles = await resolveTlsFiles(options, kube, logger, closers);
    const material = await loadTlsMaterial(tlsFiles);

    const store = new InjectionConfigStore(
      kube === undefined ? undefined : `${options.configNamespace}/${options.configName}`,
    );
    let draining = false;
    const ready = (): boolean => !draining && store.loadedAt !== undefined;
    const metrics = createMetrics({ defaultMetrics: true, configLoadedAt: () => store.loadedAt, now: Date.now });
    metrics.tlsCertificate(material.notAfter);
    const watch = directoryWatcher({
      debounceMs: WATCH_DEBOUNCE_MS,
      resyncMs: WATCH_RESYNC_MS,
      timers: systemTimers,
      onError: (dir, error) => logger.warn({ dir, error: error.message }, 'directory watch failed'),
    });

    let review: ReviewDeps;
    if (kube === undefined) {
      const configWatch = await startConfigFileWatch({
        file: options.configFile,
        store,
        watch,
        logger,
        onResult: (result) => recordConfigLoad(metrics, result),
      });
      closers.push(() => configWatch.close());
      review = { config: () => store.snapshot(), selectRuntimes: (pod) => runtimesFromAnnotations(pod) };
      if (options.trustedCreators !== undefined) {
        logger.warn('--trusted-creators has no effect in local mode: runtimes come from pod annotations, whoever wrote them');
      }
    } else {
      review = await startClusterSources(options, kube, store, metrics, logger, closers);
    }
    review = { ...review, ...injectionSettings(options) };

    const tlsPolicy = tlsPolicyOf(options);
    const app = buildApp({
      https: httpsServerOptions(material, tlsPolicy),
      review,
      ready,
      draining: () => draining,
      limits: transportLimits(options),
      logger,
      metrics,
    });
    let drained = false;
    closers.push(async () => {
      if (!drained) await app.close();
    });
    await app.listen({ host: options.host, port: options.port });

    const tls = startTlsReloader({
      files: tlsFiles,
      initial: material,
      target: app.server,
      watch,
      sleep: (ms) => sleep(ms),
      attempts: TLS_RELOAD_ATTEMPTS,
      retryDelayMs: TLS_RELOAD_RETRY_MS,
      policy: tlsPolicy,
      onResult: (result) => recordTlsReload(logger, metrics, result),
    });
    closers.push(() => tls.close());

    if (options.metricsPort !== 0) {
      const onError = (error: unknown): void => logger.error({ err: error }, 'metrics request failed');
      const metricsServer = await startMetricsServer(
        { registry: metrics.registry, ready, onError },
        options.host,
        options.metricsPort,
      );
      closers.push(() => metricsServer.close());
    }

    logger.info(
      {
        address: app.server.address() as AddressInfo,
        metricsPort: options.metricsPort,
        mode: kube === undefined ? 'local' : 'cluster',
        ...(kube === undefined ? { configFile: options.configFile } : { configMap: store.configMapName }),
        certFile: tlsFiles.certFile,
        certNotAfter: material.notAfter.toISOString(),
        clientCertificates: tlsFiles.clientCaFile === undefined ? 'not required' : 'required',
      },
      'listening',
    );

    const stop = await stopSignals.first;
    logger.info({ signal: stop.signal }, 'shutting down: draining in-flight admissions');
    draining = true;
    if (options.shutdownDelaySeconds > 0) {
      // A second signal cuts the delay short as well as the drain.
      await Promise.race([sleep(options.shutdownDelaySeconds * 1000), stopSignals.second]);
    }
    const forced = await drain(app, options.shutdownTimeoutSeconds * 1000, stopSignals.second, logger);
    drained = true;
    logger.info({ forced }, 'stopped');
    return forced ? 1 : 0;
  } finally {
    stopSignals.remove();
    for (const close of closers.reverse()) await close();
  }
}

/** Cluster mode when given a kubeconfig or running in a pod; otherwise everything comes from local files. */
async function clusterClients(options: Readonly<ServeOptions>, logger: Logger): Promise<KubeClients | undefined> {
  // Without a kubeconfig, only a pod's environment can mean cluster mode; check that before loading the client.
  if (options.kubeconfig === undefined && process.env.KUBERNETES_SERVICE_HOST === undefined) return undefined;
  const { createKubeClients, runningInCluster } = await import('../sources/kube/clients.js');
  if (options.kubeconfig === undefined && !runningInCluster(process.env)) return undefined;
  logger.info({ kubeconfig: options.kubeconfig ?? 'in-cluster service account' }, 'cluster mode');
  return createKubeClients(options.kubeconfig);
}

async function resolveTlsFiles(
  options: Readonly<ServeOptions>,
  kube: KubeClients | undefined,
  logger: Logger,
  closers: (() => Promise<void>)[],
): Promise<TlsFiles> {
  const clientCa = options.tlsClientCaFile === undefined ? {} : { clientCaFile: options.tlsClientCaFile };
  if (options.tlsCertFile !== undefined && options.tlsKeyFile !== undefined) {
    return { certFile: options.tlsCertFile, keyFile: options.tlsKeyFile, ...clientCa };
  }
  if (options.certMode === 'self-managed' || (options.certMode === 'auto' && kube !== undefined)) {
    if (kube === undefined) throw new Error('--cert-mode self-managed needs cluster mode (--kubeconfig, or running in a pod)');
    const { startSelfManagedCertificates } = await import('../certs/self-managed.js');
    const certificates = startSelfManagedCertificates({
      clients: kube,
      namespace: options.certNamespace,
      secretName: options.certSecretName,
      serviceName: options.serviceName,
      webhookConfigName: options.webhookConfigName,
      dir: options.certDir,
      extraSans: (options.certExtraSans ?? '').split(',').map((s) => s.trim()).filter((s) => s !== ''),
      pollIntervalMs: options.certPollSeconds * 1000,
      logger,
    });
    closers.push(() => certificates.stop());
    await certificates.ready;
    logger.info({ secret: `${options.certNamespace}/${options.certSecretName}`, dir: options.certDir }, 'self-managed certificate ready');
    return { certFile: certificates.files.certFile, keyFile: certificates.files.keyFile, ...clientCa };
  }
  const { files, outcome } = await ensureSelfSignedCertificates(options.selfSignedDir);
  logger.info(
    { caFile: files.caCertFile, certFile: files.certFile, outcome },
    'no certificate given: serving a self-signed one for localhost (clients trust the CA file)',
  );
  return { certFile: files.certFile, keyFile: files.keyFile, ...clientCa };
}

/**
 * Cluster mode: the injection config from a cached watch of the ConfigMap, runtimes from the owning Sandbox
 * (cached watch, GET on a miss). Admissions never call the API for the config.
 */
async function startClusterSources(
  options: Readonly<ServeOptions>,
  kube: KubeClients,
  store: InjectionConfigStore,
  metrics: ServerMetrics,
  logger: Logger,
  closers: (() => Promise<void>)[],
): Promise<ReviewDeps> {
  const { watchInjectionConfigMap } = await import('../sources/kube/configmap-watch.js');
  const { parseTrustedCreators, runtimesFromOwner, watchSandboxes } = await import('../sources/kube/sandbox-runtimes.js');
  // Unset keeps the behaviour from before the flag existed, so a run outside the manifests (a laptop with a
  // kubeconfig) is not broken by it; the manifests set it, and the warning says what unset means.
  const trustedCreators = options.trustedCreators === undefined ? undefined : parseTrustedCreators(options.trustedCreators);
  if (trustedCreators === undefined) {
    logger.warn('every pod creator is trusted: any pod naming a Sandbox as its controller owner gets its runtimes (see --trusted-creators)');
  } else {
    logger.info({ users: [...trustedCreators.users], groups: [...trustedCreators.groups] }, 'only trusted creators may create pods owned by a Sandbox');
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
  });
  closers.push(() => configWatch.stop());
  const sandboxes = watchSandboxes(kube, {
    onError: (error, retryInMs) => logger.warn({ err: error, retryInMs }, 'Sandbox watch failed; restarting'),
  });
  closers.push(() => sandboxes.watch.stop());
  return {
    config: () => store.snapshot(),
    selectRuntimes: (pod, request) =>
      runtimesFromOwner(pod, request, sandboxes.lookup, options.allowAnnotationRuntimes, trustedCreators),
  };
}

function recordConfigMapChange(
  logger: Logger,
  metrics: ServerMetrics,
  configMap: string,
  report: ConfigUpdateReport,
  event: string,
): void {
  metrics.configReload('success', report.invalidKeys.length);
  logger.info({ configMap, event, invalidKeys: report.invalidKeys.length }, 'injection config applied');
  logConfigProblems(logger, { configMap }, report);
}

/**
 * Stops accepting, lets every admission in flight finish, and returns whether connections had to be cut
 * (the timeout passed, or a second signal asked for it). A connection used since SIGTERM closes after the
 * answer that told it `Connection: close`; the rest are closed while idle, so a keep-alive client cannot
 * hold the process open.
 */
async function drain(
  app: ReturnType<typeof buildApp>,
  timeoutMs: number,
  secondSignal: Promise<Stop>,
  logger: Logger,
): Promise<boolean> {
  let forced = false;
  const force = (why: string): void => {
    if (forced) return;
    forced = true;
    logger.warn({ why }, 'closing connections with admissions still in flight');
    app.server.closeAllConnections();
  };
  const sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
  const timeout = setTimeout(() => force(`shutdown timeout of ${timeoutMs} ms passed`), timeoutMs);
  void secondSignal.then((stop) => force(`second ${stop.signal}`));
  try {
    await app.close();
  } finally {
    clearInterval(sweep);
    clearTimeout(timeout);
  }
  return forced;
}

/** SIGTERM (kubelet) or SIGINT (a terminal) starts the drain; a second one cuts it short. */
function listenForStopSignals(): { first: Promise<Stop>; second: Promise<Stop>; remove(): void } {
  const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
  const resolvers: ((stop: Stop) => void)[] = [];
  const first = new Promise<Stop>((resolve) => resolvers.push(resolve));
  const second = new Promise<Stop>((resolve) => resolvers.push(resolve));
  let received = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    resolvers[received]?.({ signal });
    received += 1;
  };
  for (const signal of signals) process.on(signal, onSignal);
  return {
    first,
    second,
    remove: () => {
      for (const signal of signals) process.off(signal, onSignal);
    },
  };
}

function recordConfigLoad(metrics: ServerMetrics, result: ConfigLoadResult): void {
  if (result.kind === 'loaded') metrics.configReload('success', result.invalidKeys.length);
  else if (result.kind === 'failed') metrics.configReload('failure', undefined);
}

function recordTlsReload(logger: Logger, metrics: ServerMetrics, result: TlsReloadResult): void {
  if (result.kind === 'reloaded') {
    metrics.tlsReload('success');
    metrics.tlsCertificate(result.material.notAfter);
    const { subject, notAfter } = result.material;
    logger.info({ subject, notAfter: notAfter.toISOString(), attempts: result.attempts }, 'serving certificate reloaded');
  } else if (result.kind === 'failed') {
    metrics.tlsReload('failure');
    logger.warn(
      { error: result.message, attempts: result.attempts },
      'serving certificate not reloaded; the previous one stays in use',
    );
  }
}
