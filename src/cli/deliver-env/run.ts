/**
 * `sandbox-injector deliver-env` once its options are read: builds the
 * clients, the caches, the Lease election and the reconciler, starts /metrics /healthz /readyz, and waits for
 * SIGTERM/SIGINT, on which it hands the Lease back. The parts (src/deliver/) know nothing of signals or env.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { eventQueue, type EventQueue } from '../../deliver/event-queue.js';
import { createEvent, eventFor, eventObject } from '../../deliver/events.js';
import { Deliverer, type Clock, type DeliveryOutcome } from '../../deliver/deliverer.js';
import { envdFiles } from '../../deliver/envd-files.js';
import { LeaderElection, type LeaseApi } from '../../deliver/leader-election.js';
import { createDeliveryMetrics } from '../../deliver/metrics.js';
import type { DeliverOptions } from '../../deliver/options.js';
import { deliveryWatches } from '../../deliver/watches.js';
import { startMetricsServer } from '../../server/metrics-server.js';
import { createKubeClients, type KubeClients } from '../../sources/kube/clients.js';
import { errorMessage } from '../../util/error-message.js';
import { unrefSleep } from '../../util/sleep.js';
import { listenForStopSignals } from '../serve/shutdown.js';

/** Events sent at once, and waiting at most, behind the deliveries (see deliver/event-queue.ts). */
const EVENT_CONCURRENCY = 4;
const EVENT_BACKLOG = 10_000;
/** How long an Event waits behind a burst of deliveries at most. */
const EVENT_MAX_HOLD_MS = 5000;
/** On SIGTERM, how long the Events still waiting may take to go out. */
const EVENT_DRAIN_MS = 3000;

export async function runDeliverEnv(options: Readonly<DeliverOptions>, logger: Logger): Promise<number> {
  const signals = listenForStopSignals(process);
  const clients = createKubeClients(options.kubeconfig);
  const identity = options.identity ?? `${hostname()}_${randomUUID()}`;
  const metrics = createDeliveryMetrics({ defaultMetrics: true });
  const envd = envdFiles({
    timeoutMs: options.requestTimeoutMs,
    maxBodyBytes: options.maxAnswerBytes,
    onRequest: (operation, outcome) => metrics.envdRequest(operation, outcome),
  });
  const clock: Clock = {
    now: Date.now,
    setTimer: (task, ms) => {
      const timer = setTimeout(task, ms);
      return () => clearTimeout(timer);
    },
  };
  const events = eventQueue({
    concurrency: EVENT_CONCURRENCY,
    limit: EVENT_BACKLOG,
    busy: () => deliverer.busy(),
    maxHoldMs: EVENT_MAX_HOLD_MS,
    clock,
    onDropped: () => logger.warn({}, 'Event backlog full: the oldest Event was dropped'),
    onError: (error) => logger.warn({ err: { message: firstLine(errorMessage(error)) } }, 'cannot record Event'),
  });
  // The watches enqueue into the deliverer, which reads their cache: enqueue is only called once they start.
  const watches = deliveryWatches(
    clients,
    (key) => deliverer.enqueue(key),
    (what, error, retryInMs) =>
      logger.warn(
        { watch: what, retryInMs, err: { message: firstLine(errorMessage(error)) } },
        'watch failed; restarting',
      ),
  );
  const deliverer = new Deliverer({
    cache: watches.cache,
    envd,
    settings: {
      envDir: options.envDir,
      user: options.fileUser,
      runtimePort: options.runtimePort,
      concurrency: options.concurrency,
      backoff: { minMs: options.backoffMinMs, maxMs: options.backoffMaxMs },
    },
    clock,
    random: Math.random,
    report: (outcome) => report(outcome, { logger, metrics, clients, watches, identity, events }),
    onBug: (key, error) =>
      logger.error({ sandbox: key, err: { message: errorMessage(error) } }, 'delivery failed unexpectedly'),
  });
  const election = new LeaderElection({
    api: leaseApi(clients, options.leaseName, options.leaseNamespace),
    name: options.leaseName,
    namespace: options.leaseNamespace,
    identity,
    durationSeconds: options.leaseDurationSeconds,
    retryMs: options.leaseRetrySeconds * 1000,
    renewDeadlineMs: options.leaseRenewDeadlineSeconds * 1000,
    now: Date.now,
    sleep: unrefSleep,
    onLeading: (leading) => {
      metrics.leader(leading);
      logger.info(
        { identity, lease: `${options.leaseNamespace}/${options.leaseName}` },
        leading ? 'holding the Lease: delivering' : 'following the Lease',
      );
      deliverer.setLeading(leading);
    },
    onError: (error) => logger.warn({ err: { message: firstLine(errorMessage(error)) } }, 'Lease update failed'),
  });
  const server = await startMetricsServer(
    {
      registry: metrics.registry,
      ready: () => watches.synced && election.settled,
      onError: (error) => logger.error({ err: { message: errorMessage(error) } }, 'metrics failed'),
    },
    options.host,
    options.metricsPort,
  );
  watches.start();
  election.start();
  logger.info({ metricsPort: server.port, identity, envDir: options.envDir }, 'deliver-env started');

  const stop = await signals.first;
  logger.info({ signal: stop.signal }, 'stopping');
  // A second signal from here on ends the process; an echo of this one (within REPEATED_SIGNAL_MS) does not.
  void signals.remove();
  await election.stop();
  await watches.stop();
  await Promise.race([events.drained(), new Promise((resolve) => setTimeout(resolve, EVENT_DRAIN_MS).unref())]);
  await server.close();
  return 0;
}

interface ReportDeps {
  logger: Logger;
  metrics: ReturnType<typeof createDeliveryMetrics>;
  clients: KubeClients;
  watches: ReturnType<typeof deliveryWatches>;
  identity: string;
  events: EventQueue;
}

/** A metric, a log line, and where due an Event: none of them with a value or a token. */
function report(outcome: DeliveryOutcome, deps: ReportDeps): void {
  deps.metrics.outcome(outcome);
  const fields = {
    sandbox: outcome.key,
    podUid: outcome.podUid,
    outcome: outcome.kind === 'failed' ? outcome.reason : outcome.kind,
  };
  if (outcome.kind === 'failed') {
    deps.logger.warn({ ...fields, retryInMs: outcome.retryInMs, problem: outcome.message }, 'env delivery failed');
  } else if (outcome.kind === 'delivered') {
    deps.logger.info(
      { ...fields, variables: outcome.variables, requests: outcome.requests, claimToReadyMs: outcome.claimToReadyMs },
      'env delivered',
    );
  } else {
    deps.logger.debug(fields, 'env already delivered');
  }
  const event = eventFor(outcome);
  const sandbox = deps.watches.cache.get(outcome.key);
  if (event === undefined || sandbox === undefined) return;
  const body = eventObject(sandbox, event, Date.now(), deps.identity);
  deps.events.push(() => createEvent(deps.clients.core, body));
}

function leaseApi(clients: KubeClients, name: string, namespace: string): LeaseApi {
  const api = clients.api(CoordinationV1Api);
  return {
    async read() {
      try {
        return await api.readNamespacedLease({ name, namespace });
      } catch (error) {
        if ((error as { code?: unknown }).code === 404) return undefined;
        throw error;
      }
    },
    create: (body: V1Lease) => api.createNamespacedLease({ namespace, body }),
    replace: (body: V1Lease) => api.replaceNamespacedLease({ name, namespace, body }),
  };
}

/** client-node's errors carry the whole response body after the first line. */
function firstLine(message: string): string {
  return message.split('\n', 1)[0] ?? message;
}
