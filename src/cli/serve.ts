/**
 * `sandbox-injector serve`: the process edge. Reads options, makes or loads the certificate, starts the
 * config and certificate watchers, the webhook and the metrics listener, then waits for SIGTERM/SIGINT and
 * drains. Everything it starts is handed in to the app and watchers, which know nothing of signals or env.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import type { ReviewDeps } from '../admission/review.js';
import { OptionsError, parseServeOptions, serveUsage, type ServeOptions } from '../config.js';
import { buildApp } from '../server/app.js';
import { createMetrics, type ServerMetrics } from '../server/metrics.js';
import { startMetricsServer } from '../server/metrics-server.js';
import { loadTlsMaterial, httpsServerOptions, type TlsFiles } from '../server/tls/material.js';
import { startTlsReloader, type TlsReloadResult } from '../server/tls/reloader.js';
import { ensureSelfSignedCertificates } from '../server/tls/self-signed.js';
import { directoryWatcher, systemTimers } from '../server/watch.js';
import { startConfigFileWatch, type ConfigLoadResult } from '../sources/config-file-watch.js';
import { InjectionConfigStore } from '../sources/injection-config.js';
import { runtimesFromAnnotations } from '../sources/pod-annotations.js';

/** Several events arrive per Kubernetes symlink swap; wait for the burst to end before reading. */
const WATCH_DEBOUNCE_MS = 250;
/** Safety net for volumes where directory events are lost; reloads compare bytes, so this is cheap. */
const WATCH_RESYNC_MS = 60_000;
/** A pair caught half-written is read again this many times, this far apart, before the change is dropped. */
const TLS_RELOAD_ATTEMPTS = 5;
const TLS_RELOAD_RETRY_MS = 400;
/** While draining, connections that finish their last response are closed this often. */
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

  const logger = pino({ level: options.logLevel, base: { pid: process.pid } });
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
    const tlsFiles = await resolveTlsFiles(options, logger);
    const material = await loadTlsMaterial(tlsFiles);

    const store = new InjectionConfigStore();
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

    const configWatch = await startConfigFileWatch({
      file: options.configFile,
      store,
      watch,
      logger,
      onResult: (result) => recordConfigLoad(metrics, result),
    });
    closers.push(() => configWatch.close());

    const app = buildApp({ https: httpsServerOptions(material), review: reviewDeps(store), ready, logger, metrics });
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
        configFile: options.configFile,
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

async function resolveTlsFiles(options: Readonly<ServeOptions>, logger: Logger): Promise<TlsFiles> {
  const clientCa = options.tlsClientCaFile === undefined ? {} : { clientCaFile: options.tlsClientCaFile };
  if (options.tlsCertFile !== undefined && options.tlsKeyFile !== undefined) {
    return { certFile: options.tlsCertFile, keyFile: options.tlsKeyFile, ...clientCa };
  }
  const { files, outcome } = await ensureSelfSignedCertificates(options.selfSignedDir);
  logger.info(
    { caFile: files.caCertFile, certFile: files.certFile, outcome },
    'no certificate given: serving a self-signed one for localhost (clients trust the CA file)',
  );
  return { certFile: files.certFile, keyFile: files.keyFile, ...clientCa };
}

/** Offline and annotation-driven; cluster mode swaps `selectRuntimes` for the owning Sandbox lookup. */
function reviewDeps(store: InjectionConfigStore): ReviewDeps {
  return { config: () => store.snapshot(), selectRuntimes: (pod) => runtimesFromAnnotations(pod) };
}

/**
 * Stops accepting, lets every admission in flight finish, and returns whether connections had to be cut
 * (the timeout passed, or a second signal asked for it). Connections that go idle after their last
 * response are closed as they do, so a keep-alive client cannot hold the process open.
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
