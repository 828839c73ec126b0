/**
 * deliver-env's Prometheus instruments, on a registry of its own. Labels are small fixed sets: an outcome, a
 * delivery kind, an envd operation and a status class. No label ever carries a Sandbox name, a variable or a
 * token. The work queue's figures are read at scrape time.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EnvdOperation } from '../envd/envd-files.js';
import { DELIVERY_KINDS, type DeliveryOutcome } from './outcome.js';
import { UNDECIDED_CASES } from '../../sandbox/pod-identity.js';
import type { QueueFigures } from './work-queue.js';

export const DELIVERY_OUTCOMES = [
  'delivered',
  'unchanged',
  'refused',
  'unauthorized',
  'rejected',
  'unavailable',
] as const;
export type DeliveryOutcomeLabel = (typeof DELIVERY_OUTCOMES)[number];

export interface DeliveryMetrics {
  registry: Registry;
  outcome(outcome: DeliveryOutcome): void;
  envdRequest(operation: EnvdOperation, outcome: number | 'error'): void;
  leader(leading: boolean): void;
  retry(): void;
}

const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export function createDeliveryMetrics(options: {
  defaultMetrics: boolean;
  queue: () => QueueFigures;
}): DeliveryMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const deliveries = new Counter({
    name: 'sandbox_injector_env_deliveries_total',
    help: 'Deliveries of a claim environment, by outcome (failures by reason)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of DELIVERY_OUTCOMES) deliveries.inc({ outcome }, 0);
  const writes = new Counter({
    name: 'sandbox_injector_env_writes_total',
    help: 'Writes to a pod env folder, by kind: claim, change, resume (a new pod of a claim), empty (claimed without a request), cleared (the claim ended)',
    labelNames: ['kind'],
    registers: [registry],
  });
  for (const kind of DELIVERY_KINDS) writes.inc({ kind }, 0);
  const claimToReady = new Histogram({
    name: 'sandbox_injector_env_claim_to_ready_seconds',
    help: "From the Sandbox's claim-timestamp annotation to .env_ready written, first claims only; upstream writes the annotation in whole seconds, so this is up to 1 s long",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const seenToReady = new Histogram({
    name: 'sandbox_injector_env_seen_to_ready_seconds',
    help: 'From this controller first seeing what called for a write to the write done, by kind',
    labelNames: ['kind'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const requests = new Counter({
    name: 'sandbox_injector_envd_requests_total',
    help: 'Requests to envd, by operation and status class (error: no answer)',
    labelNames: ['operation', 'status'],
    registers: [registry],
  });
  const leader = new Gauge({
    name: 'sandbox_injector_deliver_leader',
    help: '1 while this replica holds the Lease and delivers',
    registers: [registry],
  });
  leader.set(0);
  const held = new Counter({
    name: 'sandbox_injector_deliver_held_total',
    help: 'Sandboxes to whose pod nothing was sent because identity could not decide it (status.podInfo.podUID names no pod, a gone, terminal or host-network pod, or two pods claim the Sandbox), by case; counted once per change, where a claim waits or the case is suspicious',
    labelNames: ['case'],
    registers: [registry],
  });
  for (const kind of UNDECIDED_CASES) held.inc({ case: kind }, 0);
  const retries = new Counter({
    name: 'sandbox_injector_deliver_retries_total',
    help: 'Reconciles scheduled again after a failure, with backoff',
    registers: [registry],
  });
  new Gauge({
    name: 'sandbox_injector_deliver_queue_depth',
    help: 'Sandboxes waiting in the work queue (not counting those waiting out a backoff)',
    registers: [registry],
    collect() {
      this.set(options.queue().depth);
    },
  });
  new Gauge({
    name: 'sandbox_injector_deliver_queue_oldest_seconds',
    help: 'How long the oldest Sandbox in the work queue has waited, 0 when none waits',
    registers: [registry],
    collect() {
      this.set(options.queue().oldestQueuedSeconds);
    },
  });
  new Gauge({
    name: 'sandbox_injector_deliver_longest_running_seconds',
    help: 'How long the longest-running reconcile has run, 0 when none runs',
    registers: [registry],
    collect() {
      this.set(options.queue().longestRunningSeconds);
    },
  });
  return {
    registry,
    outcome(outcome) {
      if (outcome.kind === 'held') {
        held.inc({ case: outcome.case });
        return;
      }
      const label: DeliveryOutcomeLabel = outcome.kind === 'failed' ? outcome.reason : outcome.kind;
      // Clearing is counted among the writes, not as a delivery.
      if (outcome.kind !== 'delivered' || outcome.delivery !== 'cleared') deliveries.inc({ outcome: label });
      if (outcome.kind !== 'delivered') return;
      writes.inc({ kind: outcome.delivery });
      seenToReady.observe({ kind: outcome.delivery }, outcome.seenToReadyMs / 1000);
      if (outcome.claimToReadyMs !== undefined) claimToReady.observe(outcome.claimToReadyMs / 1000);
    },
    envdRequest(operation, outcome) {
      requests.inc({ operation, status: outcome === 'error' ? 'error' : `${Math.floor(outcome / 100)}xx` });
    },
    leader(leading) {
      leader.set(leading ? 1 : 0);
    },
    retry() {
      retries.inc();
    },
  };
}
