/**
 * The webhook's HTTPS app: unwraps the request, calls `reviewAdmission`, wraps the answer, and records one
 * log line and one set of metrics per admission. It reads no environment, opens no files and installs no
 * signal handlers: everything arrives in `AppDeps`, so a test builds it and calls `app.inject()`.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Server, ServerOptions as HttpsServerOptions } from 'node:https';
import type { Socket } from 'node:net';
import { reviewAdmission, type AdmissionSummary, type ReviewDeps } from '../admission/review.js';
import { mapsOfLargeBody } from '../admission/pod-limits.js';
import type { PodMapScan } from '../admission/pod-map-scan.js';
import { reviewBytes } from '../admission/serialize.js';
import { HTTP_ERRORS } from '../errors.js';
import type { Logger } from '../util/logger.js';
import { LOG_NAME_MAX, cutList, cutMessage, cutName, cutNames, cutString } from '../util/log-fields.js';
import { failureFor, httpFailure } from './http-errors.js';
import { Connections } from './connections.js';
import type { ServerMetrics } from './metrics.js';
import {
  BusyError,
  ByteBudget,
  DEFAULT_TRANSPORT_LIMITS,
  RETRY_AFTER_SECONDS,
  Reservation,
  busyBody,
  clientErrorHandler,
  connectionsCheckingIntervalMs,
  inactivityTimeoutMs,
  countingStream,
  declaredBody,
  socketOf,
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
}

const MUTATE_PATH = '/mutate';
/** Methods each known path answers; any other method there gets 405 rather than a misleading 404. */
const ROUTE_METHODS: ReadonlyMap<string, string> = new Map([
  [MUTATE_PATH, 'POST'],
  ['/healthz', 'GET, HEAD'],
  ['/readyz', 'GET, HEAD'],
]);

export function buildApp(deps: AppDeps): FastifyInstance<Server> {
  const limits: TransportLimits = { ...DEFAULT_TRANSPORT_LIMITS, ...deps.limits };
  const draining = deps.draining ?? (() => false);
  // A request whose answer went out before its body ended (413, 503) gets no second answer on a timeout.
  const answeredEarly = new WeakSet<Socket>();
  const app = Fastify({
    https: {
      ...deps.https,
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingIntervalMs(limits),
      handshakeTimeout: limits.requestTimeoutMs,
    },
    // No Fastify request lines: the one admission line per review replaces them (see admissionLogFields).
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
    clientErrorHandler: clientErrorHandler(limits, answeredEarly, (reason) => deps.metrics.refused(reason)),
  });

  // Replaces Node's default (destroy on inactivity) only to count the connections holding unread answers.
  app.server.on('timeout', (socket: Socket) => {
    if (socket.writableLength > 0) deps.metrics.refused('unread_response');
    socket.destroy();
  });
  const connections = new Connections(app.server, {
    maxConnections: limits.maxConnections,
    slowClientGraceMs: limits.slowClientGraceMs,
    draining,
    onCount: (open) => deps.metrics.openConnections(open),
    onRefused: (reason) => deps.metrics.refused(reason),
  });
  const budget = new ByteBudget(
    limits.maxInflightBytes,
    (used) => deps.metrics.inflightBytes(used),
    (bytes) => connections.evictStalledHolders(bytes),
  );
  const reservations = new WeakMap<object, Reservation>();

  app.addHook('onRequest', (request, reply, done) => {
    const socket = socketOf(request.raw);
    if (socket !== undefined) {
      // What is left of a pipelined batch on a connection closed below: no work, and no second count.
      if (socket.destroyed) {
        reply.hijack();
        done();
        return;
      }
      answeredEarly.delete(socket);
      // kube-apiserver reads each answer before it sends another request on the connection. A client with
      // answers still unsent here is not reading them, and would pile up one per request it sends; one whose
      // last request is not even answered yet sent this one without waiting (it pipelines), and every
      // request it sends is a review nobody reads.
      if (socket.writableLength > limits.maxUnreadBytes || connections.awaitingAnswer(socket)) {
        deps.metrics.refused('unread_response');
        reply.hijack();
        socket.destroy();
        done();
        return;
      }
    }
    const reservation = new Reservation(budget);
    reservations.set(request.raw, reservation);
    if (socket !== undefined) connections.requestStarted(socket, reservation);
    reply.raw.once('finish', () => {
      if (socket !== undefined && !request.raw.complete) answeredEarly.add(socket);
    });
    // 'close' follows the answer's last byte leaving, or the connection ending: either way its bytes are free.
    reply.raw.once('close', () => {
      reservation.release();
      if (socket !== undefined) connections.requestEnded(socket, reservation);
    });
    const body = declaredBody(request.raw);
    // A body over the body limit is refused by Fastify with 413 before it is read, so it takes nothing.
    if (body !== undefined && 'length' in body && body.length <= limits.maxBodyBytes && !reservation.take(body.length)) {
      deps.metrics.refused('busy');
      // The connection stays open and Node reads the unread body away: closing now could reset the
      // connection before the client has read this answer, and kube-apiserver retries a 503 with Retry-After.
      void reply.code(503).header('retry-after', String(RETRY_AFTER_SECONDS)).send(busyBody(budget));
      return;
    }
    done();
  });

  app.addHook('preParsing', (request, _reply, payload, done) => {
    const reservation = reservations.get(request.raw);
    const body = declaredBody(request.raw);
    if (reservation === undefined || body === undefined || 'length' in body) {
      done(null, payload);
      return;
    }
    const counted = countingStream(reservation);
    payload.on('error', (error) => counted.destroy(error));
    done(null, payload.pipe(counted));
  });

  // Past parsing: the whole body has arrived, so the connection is no longer a slow client.
  app.addHook('preHandler', (request, _reply, done) => {
    const socket = socketOf(request.raw);
    if (socket !== undefined) connections.requestReceived(socket);
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    if (draining()) void reply.header('connection', 'close');
    const reservation = reservations.get(request.raw);
    reservation?.growTo(payloadBytes(payload));
    const socket = socketOf(request.raw);
    if (socket !== undefined && reservation !== undefined) connections.requestAnswered(socket, reservation);
    done(null, payload);
  });

  // Only JSON is a review; without this, text/plain would reach the handler as a string.
  app.removeContentTypeParser('text/plain');

  // Fastify's own JSON parser (its errors, its prototype-poisoning refusals), plus, for a body large enough to
  // hold a huge label or annotation map, one pass over the text that measures those maps, so that the review
  // never enumerates them (src/admission/pod-map-scan.ts says why).
  const podMaps = new WeakMap<object, PodMapScan>();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, payload, done) => {
    const text = payload as string;
    void parseJson(request, text, (error: Error | null, body?: unknown) => {
      const scan = error === null ? mapsOfLargeBody(text) : undefined;
      if (scan !== undefined && body !== null && typeof body === 'object') podMaps.set(body, scan);
      done(error, body);
    });
  });

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
        const body = request.body;
        const scan = body !== null && typeof body === 'object' ? podMaps.get(body) : undefined;
        const outcome = await reviewAdmission(body, deps.review, scan);
        const ms = elapsedMs(request.raw);
        if (outcome.kind === 'bad-request') {
          deps.metrics.admissionFailed('bad_request', ms / 1000);
          const { status, body } = httpFailure(HTTP_ERRORS.reviewMalformed(outcome.message));
          deps.logger.warn({ durationMs: round(ms), code: body.code, message: cutMessage(body.message) }, 'admission refused');
          reply.code(status);
          return body;
        }
        deps.metrics.admission(outcome.summary, ms / 1000);
        deps.logger.info(admissionLogFields(outcome.summary, ms), 'admission');
        reply.type('application/json; charset=utf-8');
        return reviewBytes(outcome.review);
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
    const { status, body } = httpFailure(
      allowed === undefined
        ? HTTP_ERRORS.routeNotFound(request.method, path)
        : HTTP_ERRORS.methodNotAllowed(request.method, path, allowed),
    );
    reply.code(status);
    if (allowed !== undefined) reply.header('allow', allowed);
    return body;
  });

  // Reached for body parsing failures (413, 415, malformed JSON) before any handler runs.
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof BusyError) {
      deps.metrics.refused('busy');
      // The body was being read when the budget ran out and the rest is left unread: end the connection.
      reply.code(503).header('retry-after', String(RETRY_AFTER_SECONDS)).header('connection', 'close');
      return busyBody(budget);
    }
    const failure = failureFor(error, { contentType: request.headers['content-type'], bodyLimit: limits.maxBodyBytes });
    if (request.routeOptions.url === MUTATE_PATH) {
      deps.metrics.admissionFailed(failure.status >= 500 ? 'error' : 'bad_request', elapsedMs(request.raw) / 1000);
    }
    const path = cutMessage(request.routeOptions.url ?? request.url);
    const { message, code } = failure.body;
    deps.logger.warn({ path, status: failure.status, message: cutMessage(message), code }, 'request refused');
    reply.code(failure.status);
    return failure.body;
  });

  return app;
}


/**
 * The one line per admission: who, what was asked, what was decided. Never env values or certificates.
 * Every field that came from the request is cut (src/util/log-fields.ts).
 */
function admissionLogFields(summary: AdmissionSummary, elapsedMs: number): Record<string, unknown> {
  return {
    uid: cutName(summary.uid),
    namespace: cutName(summary.namespace),
    pod: cutName(summary.pod),
    runtimes: cutNames(summary.runtimes),
    decision: summary.decision,
    present: cutNames(summary.present),
    skipped: cutSkipped(summary.skipped),
    patchBytes: summary.patchBytes,
    warnings: summary.warnings,
    durationMs: round(elapsedMs),
    ...(summary.code === undefined ? {} : { code: summary.code }),
    ...(summary.message === undefined ? {} : { message: cutMessage(summary.message) }),
  };
}

function cutSkipped(skipped: AdmissionSummary['skipped']): { runtime: string; reason: string }[] {
  return cutList<{ runtime: string; reason: string }>(
    skipped,
    ({ runtime, reason }) => ({ runtime: cutString(runtime, LOG_NAME_MAX), reason }),
    (count) => ({ runtime: `...(${count} more)`, reason: 'omitted' }),
  );
}

function payloadBytes(payload: unknown): number {
  if (typeof payload === 'string') return Buffer.byteLength(payload);
  return Buffer.isBuffer(payload) ? payload.length : 0;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
