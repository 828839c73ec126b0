/**
 * The webhook's HTTPS app: unwraps the request, calls `reviewAdmission`, wraps the answer, and records one
 * log line and one set of metrics per admission. It reads no environment, opens no files and installs no
 * signal handlers: everything arrives in `AppDeps`, so a test builds it and calls `app.inject()`.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Server, ServerOptions as HttpsServerOptions } from 'node:https';
import { reviewAdmission, type AdmissionSummary, type ReviewDeps } from '../admission/review.js';
import { reviewJson } from '../admission/serialize.js';
import { failureFor } from './http-errors.js';
import type { ServerMetrics } from './metrics.js';

/** The Kubernetes API server caps request bodies at 3 MiB; 8 MiB leaves room and still refuses abuse. */
export const BODY_LIMIT_BYTES = 8 * 1024 * 1024;

/** What the app logs through; a pino logger satisfies it. */
export interface AppLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface AppDeps {
  https: HttpsServerOptions;
  review: ReviewDeps;
  /** True once TLS material and the injection config have loaded, and until shutdown begins. */
  ready(): boolean;
  logger: AppLogger;
  metrics: ServerMetrics;
}

export const MUTATE_PATH = '/mutate';
/** Methods each known path answers; any other method there gets 405 rather than a misleading 404. */
const ROUTE_METHODS: ReadonlyMap<string, string> = new Map([
  [MUTATE_PATH, 'POST'],
  ['/healthz', 'GET, HEAD'],
  ['/readyz', 'GET, HEAD'],
]);

export function buildApp(deps: AppDeps): FastifyInstance<Server> {
  const app = Fastify({
    https: deps.https,
    // No Fastify request lines: the one admission line per review replaces them (see admissionLogFields).
    logger: false,
    bodyLimit: BODY_LIMIT_BYTES,
    // While draining, a review that arrives on an open keep-alive connection is still answered (with
    // `Connection: close`) instead of a 503 the API server would turn into a rejected pod.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  });

  // Only JSON is a review; without this, text/plain would reach the handler as a string.
  app.removeContentTypeParser('text/plain');

  // Durations count from the request's arrival, body parsing included. Fastify's reply.elapsedTime would
  // do, but it is only kept when Fastify logs requests itself.
  const receivedAt = new WeakMap<object, number>();
  const elapsedMs = (raw: object): number => performance.now() - (receivedAt.get(raw) ?? performance.now());

  app.post(MUTATE_PATH, {
    onRequest: (request, _reply, done) => {
      receivedAt.set(request.raw, performance.now());
      done();
    },
    handler: async (request, reply) => {
      try {
        const outcome = await reviewAdmission(request.body, deps.review);
        const ms = elapsedMs(request.raw);
        if (outcome.kind === 'bad-request') {
          deps.metrics.admissionFailed('bad_request', ms / 1000);
          deps.logger.warn({ durationMs: round(ms), message: outcome.message }, 'admission refused');
          reply.code(400);
          return { message: outcome.message, code: 'ERR_BAD_REVIEW' };
        }
        deps.metrics.admission(outcome.summary, ms / 1000);
        deps.logger.info(admissionLogFields(outcome.summary, ms), 'admission');
        reply.type('application/json; charset=utf-8');
        return reviewJson(outcome.review);
      } catch (error) {
        const ms = elapsedMs(request.raw);
        deps.metrics.admissionFailed('error', ms / 1000);
        deps.logger.error({ err: error, durationMs: round(ms) }, 'admission failed');
        const { status, body } = failureFor(error);
        reply.code(status);
        return body;
      }
    },
  });

  app.get('/healthz', () => ({ status: 'ok' }));
  app.get('/readyz', (_request, reply) => {
    const ready = deps.ready();
    reply.code(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'not ready' };
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0] ?? request.url;
    const allowed = ROUTE_METHODS.get(path);
    if (allowed === undefined) {
      reply.code(404);
      return { message: `no route ${request.method} ${path}`, code: 'ERR_NOT_FOUND' };
    }
    reply.code(405).header('allow', allowed);
    return { message: `${request.method} is not allowed on ${path}; use ${allowed}`, code: 'ERR_METHOD' };
  });

  // Reached for body parsing failures (413, 415, malformed JSON) before any handler runs.
  app.setErrorHandler((error, request, reply) => {
    const failure = failureFor(error, { contentType: request.headers['content-type'], bodyLimit: BODY_LIMIT_BYTES });
    if (request.routeOptions.url === MUTATE_PATH) {
      deps.metrics.admissionFailed(failure.status >= 500 ? 'error' : 'bad_request', elapsedMs(request.raw) / 1000);
    }
    const path = request.routeOptions.url ?? request.url;
    deps.logger.warn({ path, status: failure.status, ...failure.body }, 'request refused');
    reply.code(failure.status);
    return failure.body;
  });

  return app;
}


/** The one line per admission: who, what was asked, what was decided. Never env values or certificates. */
function admissionLogFields(summary: AdmissionSummary, elapsedMs: number): Record<string, unknown> {
  return {
    uid: summary.uid,
    namespace: summary.namespace,
    pod: summary.pod,
    runtimes: summary.runtimes,
    decision: summary.decision,
    present: summary.present,
    skipped: summary.skipped,
    patchBytes: summary.patchBytes,
    warnings: summary.warnings,
    durationMs: round(elapsedMs),
    ...(summary.message === undefined ? {} : { message: summary.message }),
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
