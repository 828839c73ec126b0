/**
 * deliver-env's Prometheus instruments, on a registry of its own. Labels are small fixed sets: an outcome, an
 * envd operation and a status class. No label ever carries a Sandbox name, a variable or a token.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DeliveryOutcome } from './deliverer.js';
import type { EnvdOperation } from './envd-files.js';

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
}

export function createDeliveryMetrics(options: { defaultMetrics: boolean }): DeliveryMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const deliveries = new Counter({
    name: 'sandbox_injector_env_deliveries_total',
    help: 'Deliveries of a claim environment, by outcome (failures by reason)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of DELIVERY_OUTCOMES) deliveries.inc({ outcome }, 0);
  const claimToReady = new Histogram({
    name: 'sandbox_injector_env_claim_to_ready_seconds',
    help: "From the Sandbox's claim timestamp to .env_ready written",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
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
  // Declared here for the alert rules and the docs; the work queue sets it.
  new Gauge({
    name: 'sandbox_injector_deliver_queue_oldest_seconds',
    help: "Age of the oldest key waiting in deliver-env's work queue (0 when it is empty)",
    registers: [registry],
  }).set(0);
  return {
    registry,
    outcome(outcome) {
      const label: DeliveryOutcomeLabel = outcome.kind === 'failed' ? outcome.reason : outcome.kind;
      deliveries.inc({ outcome: label });
      if (outcome.kind === 'delivered' && outcome.claimToReadyMs !== undefined)
        claimToReady.observe(outcome.claimToReadyMs / 1000);
    },
    envdRequest(operation, outcome) {
      requests.inc({ operation, status: outcome === 'error' ? 'error' : `${Math.floor(outcome / 100)}xx` });
    },
    leader(leading) {
      leader.set(leading ? 1 : 0);
    },
  };
}
