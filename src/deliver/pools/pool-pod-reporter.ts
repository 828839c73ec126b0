/**
 * What the pool pods' judgement and replacement tell people: log lines, the counter of replacements, and
 * Events on the Sandbox. Only the leader speaks, so that two replicas never say it twice.
 *
 * A pod found missing or stale gets one Warning, once per pod: this process remembers whom it told, and the
 * Event's name is made from the pod's UID and state, so a second replica (after a leader change, or a restart)
 * that makes the same Event is refused by the API server with 409 and says nothing more. Events go through the
 * event queue, behind the deliveries.
 */
import type { CoreV1Api, CoreV1Event } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../../time/clock.js';
import type { DeliverySandbox } from '../controller/claim.js';
import type { EventQueue } from '../controller/event-queue.js';
import { createEvent, eventObject, type SandboxEvent } from '../controller/events.js';
import type { PoolPodEntry } from './pool-pod-census.js';
import type { PoolPodMetrics } from './pool-pod-metrics.js';
import type { ReplacementReport } from './pool-replacement.js';

export interface PoolPodReporterDeps {
  logger: Logger;
  metrics: PoolPodMetrics;
  core: CoreV1Api;
  identity: string;
  events: EventQueue;
  clock: Clock;
}

export class PoolPodReporter {
  private leading = false;
  /** Sandbox key -> `podUid/state` this process has reported. */
  private readonly told = new Map<string, string>();

  constructor(private readonly deps: PoolPodReporterDeps) {}

  /** A term began (every pod found so far and not yet told of is told) or ended. */
  setLeading(leading: boolean, entries: Iterable<PoolPodEntry>): void {
    this.leading = leading;
    if (leading) for (const entry of entries) this.found(entry);
  }

  /** The census judged a Sandbox anew (PoolPodCensus.listen). */
  judged(key: string, after: PoolPodEntry | undefined): void {
    if (after === undefined || after.state === 'fine') {
      this.told.delete(key);
      return;
    }
    this.found(after);
  }

  replacement(report: ReplacementReport): void {
    const { logger } = this.deps;
    switch (report.kind) {
      case 'replaced': {
        const { entry, pool } = report;
        const state = entry.state === 'missing' ? 'missing' : 'stale';
        this.deps.metrics.replaced(state);
        logger.info(
          { sandbox: entry.key, podUid: entry.podUid, pool, state, problem: entry.reason },
          'pool pod replaced',
        );
        this.event(entry, undefined, {
          reason: 'PoolPodReplaced',
          type: 'Normal',
          message: `deleted pod ${entry.podUid} (${state}: ${entry.reason}) so that pool ${pool} makes a new one under the current injection config`,
        });
        return;
      }
      case 'claimed-meanwhile':
        logger.warn(
          { sandbox: report.entry.key, podUid: report.entry.podUid, pool: report.pool },
          'pool pod replaced while a claim landed on it',
        );
        this.event(report.entry, undefined, {
          reason: 'PoolPodReplacedUnderClaim',
          type: 'Warning',
          message: `pod ${report.entry.podUid} was deleted for replacement just as the Sandbox was claimed: that claim's pod is going away, and the Sandbox controller marks the Sandbox failed once it is gone`,
        });
        return;
      case 'skipped':
        logger.info(
          { sandbox: report.entry.key, podUid: report.entry.podUid, pool: report.pool, why: report.why },
          'pool pod not replaced',
        );
        return;
      case 'failed':
        logger.warn(
          { sandbox: report.entry.key, podUid: report.entry.podUid, pool: report.pool, problem: report.problem },
          'pool pod replacement failed; trying again later',
        );
        return;
      case 'stopped':
        logger.warn(
          { sandbox: report.entry.key, pool: report.pool, state: report.state, problem: report.why },
          'pool replacement stopped',
        );
        this.event(report.entry, undefined, {
          reason: 'PoolReplacementStopped',
          type: 'Warning',
          message: `pool ${report.pool}: ${report.why}; twice in a row a replaced pod did not come back fine, so no more of this pool's pods are replaced until the injection config changes`,
        });
        return;
      case 'timed-out':
        logger.warn(
          { pool: report.pool, podUid: report.podUid, cameBack: report.cameBack },
          report.cameBack
            ? 'pool pod replacement: the next pod is not Ready within the timeout; going on'
            : 'pool pod replacement: no next pod in the pool within the timeout',
        );
        return;
      case 'resumed':
        logger.info({ pool: report.pool }, 'pool replacement resumed: the injection config changed');
        return;
    }
  }

  private found(entry: PoolPodEntry): void {
    if (!this.leading || entry.state === 'fine') return;
    const told = `${entry.podUid}/${entry.state}`;
    if (this.told.get(entry.key) === told) return;
    this.told.set(entry.key, told);
    this.deps.logger.warn(
      { sandbox: entry.key, podUid: entry.podUid, pool: entry.pool?.key, problem: entry.reason },
      `pool pod ${entry.state}`,
    );
    const what = entry.state === 'missing' ? 'is missing its runtimes' : 'is stale';
    this.event(entry, `pool-pod-${entry.state}-${entry.podUid}`, {
      reason: entry.state === 'missing' ? 'PoolPodMissing' : 'PoolPodStale',
      type: 'Warning',
      message: `pod ${entry.podUid} ${what}: ${entry.reason}; a claim of it would not get what the injection config says`,
    });
  }

  /**
   * On the entry's Sandbox, which may be gone by now (its pool replaces a Sandbox whose pod was deleted).
   * `name`: the Event's own name, so that another replica's copy of it is refused; else a generated one.
   */
  private event(entry: PoolPodEntry, name: string | undefined, event: SandboxEvent): void {
    const slash = entry.key.indexOf('/');
    const sandbox: DeliverySandbox = {
      metadata: { namespace: entry.key.slice(0, slash), name: entry.key.slice(slash + 1), uid: entry.sandboxUid },
    };
    const body: CoreV1Event = eventObject(sandbox, event, this.deps.clock.now(), this.deps.identity);
    if (name !== undefined) body.metadata = { name, namespace: body.metadata.namespace };
    this.deps.events.push(async () => {
      try {
        await createEvent(this.deps.core, body);
      } catch (error) {
        if ((error as { code?: unknown }).code !== 409) throw error;
      }
    });
  }
}
