/**
 * The webhook's HTTPS app: unwraps the request, calls `reviewAdmission`, wraps the answer, and records one
 * log line and one set of metrics per admission. It reads no environment, opens no files and installs no
 * signal handlers: everything arrives in `AppDeps`, so a test builds it and calls `app.inject()`.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Server, ServerOptions as HttpsServerOptions } from 'node:https';
import { JsonPointers, type ReviewDeps } from '../admission/review.js';
import { systemClock, type Clock } from '../time/clock.js';
import type { Logger } from '../logging/logger.js';
import { admissionRoute } from './admission-route.js';
import { AnswersInFlight, clientErrorHandler } from './client-errors.js';
import { errorAnswer, notFoundAnswer } from './error-answers.js';
import { ALIVE, readiness } from './health.js';
import type { HttpFailure } from './http-failure.js';
import { logRefusal } from './log-lines.js';
import type { ServerMetrics } from './metrics.js';
import { transportGuard } from './transport-guard.js';
import {
  DEFAULT_TRANSPORT_LIMITS,
  connectionsCheckingIntervalMs,
  inactivityTimeoutMs,
  type TransportLimits,
} from './transport.js';

/**
 * kube-apiserver refuses request bodies over 3 MiB (its MaxRequestBodyBytes), so no pod it admits is larger.
 * The review around the pod adds the envelope (uid, kinds, userInfo with its groups and extra) and what
 * kube-apiserver's defaulting wrote into the pod before admission; 1 MiB more covers both. A pod larger
 * still could not be stored anyway: etcd refuses requests over 1.5 MiB by default.
 */
export const BODY_LIMIT_BYTES = DEFAULT_TRANSPORT_LIMITS.maxBodyBytes;

export interface AppDeps {
  https: HttpsServerOptions;
  review: ReviewDeps;
  /** True once TLS material and the injection config have loaded, and until shutdown begins. */
  ready(): boolean;
  /** True from SIGTERM on: every answer then says `Connection: close`. Never, when not given. */
  draining?: () => boolean;
  /** Defaults: DEFAULT_TRANSPORT_LIMITS. */
  limits?: Partial<TransportLimits>;
  logger: Logger;
  metrics: ServerMetrics;
  /** What connections' ages and admissions' durations are measured on; default systemClock. */
  clock?: Clock;
}

export function buildApp(deps: AppDeps): FastifyInstance<Server> {
  const limits: TransportLimits = { ...DEFAULT_TRANSPORT_LIMITS, ...deps.limits };
  const { logger, metrics } = deps;
  const draining = deps.draining ?? (() => false);
  const clock = deps.clock ?? systemClock;
  const refused = (path: string | undefined, failure: HttpFailure): void => logRefusal(logger, path, failure);
  const answers = new AnswersInFlight();
  const app = Fastify({
    https: {
      ...deps.https,
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingIntervalMs(limits),
      handshakeTimeout: limits.requestTimeoutMs,
    },
    // No Fastify request lines: the one admission line per review replaces them (see log-lines.ts).
    logger: false,
    bodyLimit: limits.maxBodyBytes,
    requestTimeout: limits.requestTimeoutMs,
    // The socket's inactivity timeout while a request or answer is under way: a client that stops reading
    // an answer frees its connection and the bytes it holds. Later than the request timeout, so a client
    // that stops sending mid-body gets its 408 first.
    connectionTimeout: inactivityTimeoutMs(limits),
    keepAliveTimeout: limits.idleTimeoutMs,
    // While draining, a review that arrives on an open keep-alive connection is still answered (with
    // `Connection: close`) instead of a 503 the API server would turn into a rejected pod.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    clientErrorHandler: clientErrorHandler(limits, answers, (refusal) => {
      metrics.refused(refusal.reason);
      refused(undefined, refusal);
    }),
  });

  app.setNotFoundHandler(notFoundAnswer(routeMethods(app), refused));
  app.setErrorHandler(errorAnswer({ bodyLimit: limits.maxBodyBytes, metrics, refused }));
  void app.register(transportGuard, { limits, answers, draining, metrics, refused, clock });
  // Only JSON is a review; without this, text/plain would reach a handler as a string.
  app.removeContentTypeParser('text/plain');
  // One pointer cache for the app's life: every pod of a shape writes the same paths (src/injection/pointers.ts).
  const review: ReviewDeps = { ...deps.review, pointers: new JsonPointers() };
  void app.register(admissionRoute, { review, logger, metrics, clock });

  app.get('/healthz', () => ALIVE.body);
  app.get('/readyz', (_request, reply) => {
    const { code, body } = readiness(deps.ready());
    void reply.code(code);
    return body;
  });
  return app;
}

/**
 * The methods each path answers, as the routes are added (the HEAD that Fastify adds to each GET included), for
 * the not-found handler: another method on a served path gets 405 with an Allow header, not a misleading 404.
 */
function routeMethods(app: FastifyInstance<Server>): ReadonlyMap<string, readonly string[]> {
  const methods = new Map<string, string[]>();
  app.addHook('onRoute', ({ url, method }) => {
    methods.set(url, [...(methods.get(url) ?? []), ...(typeof method === 'string' ? [method] : method)]);
  });
  return methods;
}
