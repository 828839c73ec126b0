/**
 * The one place an outcome becomes a metric, a log line and, where due, an Event on the Sandbox: none of them
 * with a value or a token. Events go through the event queue, behind the deliveries.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Clock } from '../../time/clock.js';
import type { DeliverySandbox } from './claim.js';
import type { EventQueue } from './event-queue.js';
import { createEvent, eventFor, eventObject } from './events.js';
import type { DeliveryMetrics } from './metrics.js';
import type { DeliveryOutcome } from './outcome.js';

export interface ReporterDeps {
  logger: Logger;
  metrics: DeliveryMetrics;
  core: CoreV1Api;
  sandbox: (key: string) => DeliverySandbox | undefined;
  identity: string;
  events: EventQueue;
  clock: Clock;
}

export function reporter(deps: ReporterDeps): (outcome: DeliveryOutcome) => void {
  return (outcome) => {
    deps.metrics.outcome(outcome);
    const fields = {
      sandbox: outcome.key,
      podUid: outcome.podUid,
      outcome: outcome.kind === 'failed' ? outcome.reason : outcome.kind,
    };
    if (outcome.kind === 'held') {
      deps.logger.warn({ ...fields, case: outcome.case, problem: outcome.reason }, 'env delivery held');
    } else if (outcome.kind === 'failed') {
      deps.logger.warn(
        { ...fields, event: outcome.event, code: outcome.code, retrying: outcome.retrying, problem: outcome.message },
        'env delivery failed',
      );
    } else if (outcome.kind === 'delivered') {
      deps.logger.info(
        {
          ...fields,
          kind: outcome.delivery,
          variables: outcome.variables,
          requests: outcome.requests,
          claimToReadyMs: outcome.claimToReadyMs,
          seenToReadyMs: Math.round(outcome.seenToReadyMs),
        },
        outcome.delivery === 'cleared' ? 'env cleared' : 'env delivered',
      );
    } else {
      deps.logger.debug(fields, 'env already delivered');
    }
    const event = eventFor(outcome);
    const sandbox = deps.sandbox(outcome.key);
    if (event === undefined || sandbox === undefined) return;
    const body = eventObject(sandbox, event, deps.clock.now(), deps.identity);
    deps.events.push(() => createEvent(deps.core, body));
  };
}
