/**
 * `sandbox-injector serve`: the process edge. Reads options, then wires the parts together: the certificate
 * (cli/serve/tls-source.ts), the config and runtime sources (cli/serve/config-source.ts), the webhook and the
 * metrics listener; then waits for SIGTERM/SIGINT and drains (cli/serve/shutdown.ts). What it starts is
 * closed through one Lifetime (cli/serve/lifetime.ts) however it ends. The parts know nothing of signals or env.
 */
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { buildApp } from '../server/app.js';
import { createMetrics } from '../server/metrics.js';
import { startMetricsServer } from '../server/metrics-server.js';
import { loadTlsMaterial, httpsServerOptions } from '../server/tls/material.js';
import { repeatOn, systemClock, type Clock } from '../time/clock.js';
import { directoryWatcher } from '../file-watch/directory-watch.js';
import { InjectionConfigStore } from '../config/injection-config.js';
import { commandOptions } from './command.js';
import { packageVersion } from './version.js';
import { serveTarget } from './serve/cluster.js';
import { startConfigSource } from './serve/config-source.js';
import {
  injectionSettings,
  parseServeOptions,
  serveUsage,
  tlsPolicyOf,
  transportLimits,
  type ServeOptions,
} from './serve/options.js';
import { Lifetime } from './serve/lifetime.js';
import { listenForStopSignals, shutDownOnSignal } from './serve/shutdown.js';
import { startupFailureLine } from './serve/startup-failure.js';
import { followTlsFiles, resolveTlsFiles } from './serve/tls-source.js';

/** Several events arrive per Kubernetes symlink swap; wait for the burst to end before reading. */
const WATCH_DEBOUNCE_MS = 250;
/** Safety net for volumes where directory events are lost; reloads compare bytes, so this is cheap. */
const WATCH_RESYNC_MS = 60_000;
/** About 25 admission lines: one write for them all under load. */
const LOG_BUFFER_BYTES = 8 * 1024;
/** The longest a log line waits in that buffer. */
const LOG_FLUSH_MS = 200;

/** `--help`: one line per option, from the rows the parser reads (src/cli/serve/option-rows.ts). */
export const usage = serveUsage;

export async function run(argv: string[]): Promise<number> {
  const options = commandOptions(parseServeOptions(argv, process.env), serveUsage);
  if (options === undefined) return 0;

  // Asynchronous writes keep the write syscall off the event loop, and lines are gathered up to
  // LOG_BUFFER_BYTES before a write, so that under steady load the lines of many admissions share one write
  // (`npm run bench`, the webhook's CPU per admission). A timer writes what is gathered at least every
  // LOG_FLUSH_MS, so a line is never held longer; pino writes the rest synchronously when the process exits,
  // however it exits.
  const destination = pino.destination({ sync: false, minLength: LOG_BUFFER_BYTES });
  const logger = pino({ level: options.logLevel, base: { pid: process.pid } }, destination);
  const clock = systemClock;
  const stopFlushing = repeatOn(clock, LOG_FLUSH_MS, () => destination.flush());
  try {
    return await serveUntilStopped(options, logger, clock);
  } catch (error) {
    logger.fatal({ err: error }, 'cannot serve');
    // The JSON line is for the log pipeline; a person starting the server reads stderr.
    process.stderr.write(`${startupFailureLine(error, options)}\n`);
    return 1;
  } finally {
    stopFlushing();
    logger.flush();
  }
}

async function serveUntilStopped(options: Readonly<ServeOptions>, logger: Logger, clock: Clock): Promise<number> {
  const signals = listenForStopSignals(process, clock);
  const lifetime = new Lifetime();
  try {
    const target = await serveTarget(options, logger);
    const tlsFiles = await resolveTlsFiles(options, target, logger, lifetime, clock);
    const material = await loadTlsMaterial(tlsFiles);

    const store = new InjectionConfigStore(
      target.mode === 'cluster' ? `${options.configNamespace}/${options.configName}` : undefined,
      clock,
    );
    let draining = false;
    const ready = (): boolean => !draining && store.loadedAt !== undefined;
    const metrics = createMetrics({
      defaultMetrics: true,
      configLoadedAt: () => store.loadedAt,
      now: () => clock.now(),
    });
    metrics.tlsCertificate(material.notAfter);
    const watch = directoryWatcher({
      debounceMs: WATCH_DEBOUNCE_MS,
      resyncMs: WATCH_RESYNC_MS,
      clock,
      onError: (dir, error) => logger.warn({ dir, error: error.message }, 'directory watch failed'),
    });

    const sources = await startConfigSource({ options, target, store, watch, metrics, logger, lifetime, clock });
    const tlsPolicy = tlsPolicyOf(options);
    const app = buildApp({
      https: httpsServerOptions(material, tlsPolicy),
      review: { ...sources, ...injectionSettings(options) },
      ready,
      draining: () => draining,
      limits: transportLimits(options),
      logger,
      metrics,
      clock,
    });
    const closeApp = lifetime.onClose(() => app.close());
    await app.listen({ host: options.host, port: options.port });

    followTlsFiles({
      files: tlsFiles,
      initial: material,
      target: app.server,
      watch,
      policy: tlsPolicy,
      metrics,
      logger,
      lifetime,
      clock,
    });

    if (options.metricsPort !== 0) {
      const onError = (error: unknown): void => logger.error({ err: error }, 'metrics request failed');
      const metricsServer = await startMetricsServer(
        { registry: metrics.registry, ready, onError },
        options.host,
        options.metricsPort,
      );
      lifetime.onClose(() => metricsServer.close());
    }

    logger.info(
      {
        address: app.server.address() as AddressInfo,
        version: packageVersion(),
        node: process.version,
        metricsPort: options.metricsPort,
        mode: target.mode,
        ...(target.mode === 'local' ? { configFile: options.configFile } : { configMap: store.configMapName }),
        certFile: tlsFiles.certFile,
        certNotAfter: material.notAfter.toISOString(),
        clientCertificates: tlsFiles.clientCaFile === undefined ? 'not required' : 'required',
      },
      'listening',
    );

    return await shutDownOnSignal({
      signals,
      server: {
        close: closeApp,
        // The sweep closes what the transport guard's table says is unused since the drain began, never a
        // connection whose answer is still leaving, as Node's own idle sweep would (server/connections.ts).
        connections: {
          closeIdleConnections: () => app.closeUnusedConnections(),
          closeAllConnections: () => app.server.closeAllConnections(),
        },
      },
      startDraining: () => {
        draining = true;
      },
      delayMs: options.shutdownDelayMs,
      timeoutMs: options.shutdownTimeoutMs,
      logger,
      clock,
    });
  } finally {
    // The signals go back to their default action only once everything is closed and no echo of the stop
    // signal can still come: npm forwards a Ctrl-C the server got from the terminal too, and that echo must not
    // kill the process before pino has written the shutdown lines it still holds and the exit status is set.
    try {
      await lifetime.close();
    } finally {
      await signals.remove();
    }
  }
}
