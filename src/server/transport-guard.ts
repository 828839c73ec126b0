/**
 * The transport guard: a Fastify plugin that holds every request to the limits of transport.ts before any route
 * sees it. It tracks connections (connections.ts), takes each request's bytes from the byte budget
 * (byte-budget.ts), cuts off clients that leave answers unread, and records what the parser's failure handler
 * (client-errors.ts) needs to know of each connection. What it learns of a request is on the request itself:
 * `request.transport`. For the drain it gives the app `closeUnusedConnections`, and closes the listener only
 * once no answer is being written out.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { Socket } from 'node:net';
import type { Clock } from '../time/clock.js';
import { ByteBudget, Reservation, countingStream } from './byte-budget.js';
import type { AnswersInFlight } from './client-errors.js';
import { Connections } from './connections.js';
import { answerBusy } from './error-answers.js';
import type { HttpFailure } from './http-failure.js';
import type { ServerMetrics } from './metrics.js';
import type { TransportLimits } from './transport.js';

/** What the guard knows of one request. */
export interface RequestTransport {
  /** The socket under it; undefined under app.inject(), whose stand-in has none. */
  readonly socket: Socket | undefined;
  /** Its share of the byte budget: its body as it arrives, then its answer until written out. */
  readonly reservation: Reservation;
  /**
   * Its arrival, on the app's monotonic clock: durations count from here, body parsing included. Fastify's
   * reply.elapsedTime would do, but it is only kept when Fastify logs requests itself.
   */
  readonly receivedAt: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the transport guard on arrival; null only on a request it cut off at once. */
    transport: RequestTransport | null;
  }
  interface FastifyInstance {
    /** The drain's sweep: closes the connections idle and unused since the drain began (connections.ts). */
    closeUnusedConnections(): void;
  }
}

export interface TransportGuardOptions {
  limits: TransportLimits;
  answers: AnswersInFlight;
  draining: () => boolean;
  metrics: ServerMetrics;
  /** An HTTP error answer the guard gives (503 busy), for the log. */
  refused(path: string, failure: HttpFailure): void;
  clock: Clock;
}

function guard(app: FastifyInstance<Server>, options: TransportGuardOptions, done: (error?: Error) => void): void {
  const { limits, answers, metrics } = options;
  // Replaces Node's default (destroy on inactivity) only to count the connections holding unread answers.
  app.server.on('timeout', (socket: Socket) => {
    if (socket.writableLength > 0) metrics.refused('unread_response');
    socket.destroy();
  });
  const connections = new Connections(app.server, {
    maxConnections: limits.maxConnections,
    slowClientGraceMs: limits.slowClientGraceMs,
    draining: options.draining,
    onCount: (open) => metrics.openConnections(open),
    onRefused: (reason) => metrics.refused(reason),
    clock: options.clock,
  });
  const budget = new ByteBudget(
    limits.maxInflightBytes,
    limits.maxBodyBytes,
    (used) => metrics.inflightBytes(used),
    (bytes) => connections.evictStalledHolders(bytes),
  );

  app.decorateRequest('transport', null);
  app.decorate('closeUnusedConnections', () => connections.closeUnusedSinceDrain());
  app.addHook('preClose', () => connections.answersWrittenOut());

  app.addHook('onRequest', (request, reply, hookDone) => {
    const socket = socketOf(request.raw);
    // What is left of a pipelined batch on a connection closed below: no work, and no second count.
    if (socket?.destroyed === true) {
      reply.hijack();
      hookDone();
      return;
    }
    // kube-apiserver reads each answer before it sends another request on the connection. A client with
    // answers still unsent here is not reading them, and would pile up one per request it sends; one whose
    // last request is not even answered yet sent this one without waiting (it pipelines), and every request
    // it sends is a review nobody reads.
    if (socket !== undefined && (socket.writableLength > limits.maxUnreadBytes || connections.awaitingAnswer(socket))) {
      metrics.refused('unread_response');
      reply.hijack();
      socket.destroy();
      hookDone();
      return;
    }
    const transport: RequestTransport = {
      socket,
      reservation: new Reservation(budget),
      receivedAt: options.clock.monotonic(),
    };
    request.transport = transport;
    track(request, reply, transport);
    if (!takeDeclaredBody(request.raw, transport.reservation, limits.maxBodyBytes)) {
      // A body of declared length, taken up front: none of it has been read yet.
      void reply.send(answerBusy(reply, request.url, transport.reservation.busy(), 'keep', options));
      return;
    }
    hookDone();
  });

  app.addHook('preParsing', (request, _reply, payload, hookDone) => {
    const reservation = request.transport?.reservation;
    const body = declaredBody(request.raw);
    if (reservation === undefined || body === undefined || 'length' in body) {
      hookDone(null, payload);
      return;
    }
    const counted = countingStream(reservation);
    payload.on('error', (error) => counted.destroy(error));
    hookDone(null, payload.pipe(counted));
  });

  // Past parsing: the whole body has arrived, so the connection is no longer a slow client.
  app.addHook('preHandler', (request, _reply, hookDone) => {
    const socket = request.transport?.socket;
    if (socket !== undefined) connections.requestReceived(socket);
    hookDone();
  });

  app.addHook('onSend', (request, reply, payload, hookDone) => {
    if (options.draining()) void reply.header('connection', 'close');
    const transport = request.transport;
    if (transport !== null) {
      transport.reservation.growTo(payloadBytes(payload));
      if (transport.socket !== undefined) connections.requestAnswered(transport.socket, transport.reservation);
    }
    hookDone(null, payload);
  });

  /** Follows the request's answer to its end, for the connection table and the parser's failure handler. */
  function track(request: FastifyRequest, reply: FastifyReply, { socket, reservation }: RequestTransport): void {
    if (socket !== undefined) {
      answers.started(socket, reply.raw);
      connections.requestStarted(socket, reservation);
      reply.raw.once('finish', () => answers.finished(socket, reply.raw, request.raw.complete));
    }
    // 'close' follows the answer's last byte leaving, or the connection ending: either way its bytes are free.
    reply.raw.once('close', () => {
      reservation.release();
      if (socket !== undefined) connections.requestEnded(socket, reservation);
    });
  }

  done();
}

/** Not encapsulated: the guard's hooks hold for every route, and its decorations are the app's. */
export const transportGuard = fastifyPlugin<TransportGuardOptions, Server>(guard, {
  name: 'transport-guard',
  fastify: '5.x',
});

/**
 * Takes a body of declared length from the budget up front; false when it does not fit. A body over the body
 * limit is refused by Fastify with 413 before it is read, so it takes nothing; a chunked one is counted as it
 * streams in (preParsing).
 */
function takeDeclaredBody(request: IncomingMessage, reservation: Reservation, maxBodyBytes: number): boolean {
  const body = declaredBody(request);
  if (body === undefined || !('length' in body) || body.length > maxBodyBytes) return true;
  return reservation.take(body.length);
}

/** The fields of a declared body: its length, or that it is chunked (length unknown until it ends). */
function declaredBody(request: IncomingMessage): { length: number } | { chunked: true } | undefined {
  const length = request.headers['content-length'];
  if (length !== undefined) {
    const bytes = Number(length);
    return Number.isSafeInteger(bytes) && bytes > 0 ? { length: bytes } : undefined;
  }
  return request.headers['transfer-encoding'] === undefined ? undefined : { chunked: true };
}

/** The socket under a request, when there is a real one (app.inject() has a stand-in without these). */
function socketOf(raw: IncomingMessage | ServerResponse): Socket | undefined {
  const socket = raw.socket;
  return socket !== null && typeof socket.destroy === 'function' ? socket : undefined;
}

function payloadBytes(payload: unknown): number {
  if (typeof payload === 'string') return Buffer.byteLength(payload);
  return Buffer.isBuffer(payload) ? payload.length : 0;
}
