/**
 * `sandbox-injector deliver-env` once its options are read: builds the clients, the caches, the Lease
 * election and the controller, starts /metrics /healthz /readyz, and waits for SIGTERM/SIGINT. Then it takes
 * no more work, lets what runs finish (still renewing the Lease), and only then hands the Lease back. The
 * parts (src/deliver/) know nothing of signals or env.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Controller } from '../../deliver/controller/controller.js';
import { envdFiles } from '../../deliver/envd/envd-files.js';
import { eventQueue } from '../../deliver/controller/event-queue.js';
import { kubeLeaseApi, LeaderElection } from '../../deliver/leadership/leader-election.js';
import { createDeliveryMetrics } from '../../deliver/controller/metrics.js';
import { reporter } from '../../deliver/controller/reporter.js';
import { runtimeTlsSource, secretRefOf } from '../../deliver/envd/runtime-tls-source.js';
import { deliveryWatches } from '../../deliver/controller/watches.js';
import { startPoolPods } from '../../deliver/pools/pool-pod-upkeep.js';
import { startMetricsServer } from '../../server/metrics-server.js';
import { createKubeClients } from '../../kube-client/clients.js';
import { systemClock, sleepOn } from '../../time/clock.js';
import { errorLine, errorMessage } from '../../errors/error-message.js';
import { listenForStopSignals } from '../serve/shutdown.js';
import { replacementSettings, requiresRuntimeTls, type DeliverOptions } from './options.js';

/** Events sent at once, and waiting at most, behind the deliveries (see deliver/controller/event-queue.ts). */
const EVENT_CONCURRENCY = 4;
const EVENT_BACKLOG = 10_000;
/** How long an Event waits behind a burst of deliveries at most. */
const EVENT_MAX_HOLD_MS = 5000;
/** On SIGTERM, how long the Events still waiting may take to go out. */
const EVENT_DRAIN_MS = 3000;

export async function runDeliverEnv(options: Readonly<DeliverOptions>, logger: Logger): Promise<number> {
  const clock = systemClock;
  const replacement = replacementSettings(options);
  const signals = listenForStopSignals(process, clock);
  const clients = createKubeClients(options.kubeconfig);
  const identity = options.identity ?? `${hostname()}_${randomUUID()}`;
  const metrics = createDeliveryMetrics({ defaultMetrics: true, queue: () => controller.figures() });
  const envd = envdFiles({
    timeoutMs: options.requestTimeoutMs,
    maxBodyBytes: options.maxAnswerBytes,
    user: options.fileUser,
    onRequest: (operation, outcome) => metrics.envdRequest(operation, outcome),
    clock,
  });
  const events = eventQueue({
    concurrency: EVENT_CONCURRENCY,
    limit: EVENT_BACKLOG,
    busy: () => controller.busy(),
    maxHoldMs: EVENT_MAX_HOLD_MS,
    clock,
    onDropped: () => logger.warn({}, 'Event backlog full: the oldest Event was dropped'),
    onError: (error) => logger.warn({ err: { message: errorLine(error) } }, 'cannot record Event'),
  });
  // The watches enqueue into the controller, which reads their cache: enqueue is only called once they start.
  const watches = deliveryWatches(
    clients,
    (key) => {
      controller.enqueue(key);
      poolPods.changed(key);
    },
    (what, error, retryInMs) =>
      logger.warn({ watch: what, retryInMs, err: { message: errorLine(error) } }, 'watch failed; restarting'),
    clock,
  );
  // A new bundle (or the loss of the only one) changes what TLS Sandboxes are decided: all are looked at again.
  const tls = runtimeTlsSource({
    clients,
    secret: options.runtimeTlsSecret === undefined ? undefined : secretRefOf(options.runtimeTlsSecret),
    onChange: () => controller.requeueAll(),
    onProblem: (reason, keptLastGood) =>
      logger.warn({ secret: options.runtimeTlsSecret, keptLastGood }, `runtime TLS Secret not used: ${reason}`),
    onError: (error, retryInMs) =>
      logger.warn(
        { watch: 'runtime TLS Secret', retryInMs, err: { message: errorLine(error) } },
        'watch failed; restarting',
      ),
    clock,
  });
  const controller = new Controller({
    cache: watches.cache,
    envd,
    settings: {
      envDir: options.envDir,
      runtimePort: options.runtimePort,
      trustRuntimeUrl: options.trustRuntimeUrl,
      requireTls: requiresRuntimeTls(options),
      allowHostNetwork: options.allowHostNetwork,
      recycledPods: options.recycledPods,
      concurrency: options.concurrency,
      backoff: { minMs: options.backoffMinMs, maxMs: options.backoffMaxMs },
    },
    tls: () => tls.current(),
    clock,
    random: Math.random,
    report: reporter({
      logger,
      metrics,
      core: clients.core,
      sandbox: (key) => watches.cache.get(key),
      identity,
      events,
      clock,
    }),
    onBug: (key, error) =>
      logger.error({ sandbox: key, err: { message: errorMessage(error) } }, 'delivery failed unexpectedly'),
    onRetry: () => metrics.retry(),
  });
  const poolPods = startPoolPods({
    configMap: { namespace: options.configNamespace, name: options.configName },
    allowHostNetwork: options.allowHostNetwork,
    replacement,
    clients,
    cache: watches.cache,
    registry: metrics.registry,
    events,
    logger,
    clock,
    identity,
  });
  const lease = `${options.leaseNamespace}/${options.leaseName}`;
  const election = new LeaderElection({
    api: kubeLeaseApi(clients, options.leaseName, options.leaseNamespace),
    name: options.leaseName,
    namespace: options.leaseNamespace,
    identity,
    // Whole seconds: the row takes only those, as the Lease records them.
    durationSeconds: options.leaseDurationMs / 1000,
    retryMs: options.leaseRetryMs,
    renewDeadlineMs: options.leaseRenewDeadlineMs,
    clock,
    onTerm: (term) => {
      metrics.leader(term !== undefined);
      logger.info({ identity, lease }, term !== undefined ? 'holding the Lease: delivering' : 'following the Lease');
      controller.setTerm(term);
      poolPods.setTerm(term);
    },
    onError: (error) => logger.warn({ err: { message: errorLine(error) } }, 'Lease update failed'),
  });
  const server = await startMetricsServer(
    {
      registry: metrics.registry,
      ready: () => watches.synced && tls.synced && election.settled,
      onError: (error) => logger.error({ err: { message: errorMessage(error) } }, 'metrics failed'),
    },
    options.host,
    options.metricsPort,
  );
  watches.start();
  tls.start();
  election.start();
  logger.info({ metricsPort: server.port, identity, envDir: options.envDir }, 'deliver-env started');

  const stop = await signals.first;
  logger.info({ signal: stop.signal }, 'stopping');
  // A second signal from here on ends the process; an echo of this one (within REPEATED_SIGNAL_MS) does not.
  void signals.remove();
  // No new work; what runs finishes while the Lease is still renewed, or is cut when the Lease is handed back.
  const drainBound = new AbortController();
  await Promise.race([controller.stop(), sleepOn(clock, options.requestTimeoutMs, drainBound.signal)]);
  drainBound.abort();
  await election.release();
  await watches.stop();
  await poolPods.stop();
  await tls.stop();
  await Promise.race([events.drained(), sleepOn(clock, EVENT_DRAIN_MS)]);
  await server.close();
  return 0;
}
