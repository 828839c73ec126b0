/**
 * The pool pods' Prometheus instruments, on deliver-env's registry: the pods of unclaimed Sandboxes by state
 * (every replica, read at scrape time from its census), and the replacement's deletions, what it has in flight
 * and the pools it stopped (the leader; 0 on the others). Labels are the fixed states, never a name.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { POOL_POD_STATES, type PoolPodState } from './pool-pods.js';
import { REPLACEABLE_STATES, type ReplaceableState, type ReplacementFigures } from './pool-replacement.js';

export interface PoolPodMetrics {
  replaced(state: ReplaceableState): void;
}

export interface PoolPodFigures {
  states: () => Record<PoolPodState, number>;
  replacement: () => ReplacementFigures;
}

export function poolPodMetrics(registry: Registry, figures: PoolPodFigures): PoolPodMetrics {
  new Gauge({
    name: 'sandbox_injector_pool_pods',
    help: "Pods of unclaimed Sandboxes by state: fine, missing (admitted without the webhook's runtimes), stale (made from an older injection config)",
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const now = figures.states();
      for (const state of POOL_POD_STATES) this.set({ state }, now[state]);
    },
  });
  const replacements = new Counter({
    name: 'sandbox_injector_pool_pod_replacements_total',
    help: 'Unclaimed pool pods deleted so that their pool recreates them under the current config, by the state they were in',
    labelNames: ['state'],
    registers: [registry],
  });
  for (const state of REPLACEABLE_STATES) replacements.inc({ state }, 0);
  new Gauge({
    name: 'sandbox_injector_pool_replacements_in_flight',
    help: 'Pool pod replacements deleted and not yet followed by a Ready pod (nor timed out); 0 on a replica without the Lease',
    registers: [registry],
    collect() {
      this.set(figures.replacement().inFlight);
    },
  });
  new Gauge({
    name: 'sandbox_injector_pool_replacement_stopped_pools',
    help: 'Pools whose replacement stopped because pods came back in the state they were replaced for; 0 on a replica without the Lease',
    registers: [registry],
    collect() {
      this.set(figures.replacement().stoppedPools);
    },
  });
  return {
    replaced(state) {
      replacements.inc({ state });
    },
  };
}
