/**
 * What keeps clients other than kube-apiserver from taking the webhook's memory, connections or time.
 * kube-apiserver sends at most a few MiB, gives up after the webhook's timeoutSeconds (at most 30 s), reads
 * every answer before it sends the next request on a connection, and keeps idle connections for 90 s. Each
 * limit below is set from that contract (docs/server.md has the table, docs/install.md the memory sums), so
 * kube-apiserver never meets one while a client that breaks the contract is cut off.
 *
 * The mechanisms live here; app.ts wires them into the Fastify instance.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';
import { HTTP_ERRORS } from '../errors.js';
import { httpFailure, type ErrorBody } from './http-errors.js';
import type { RefusalReason } from './metrics.js';

export interface TransportLimits {
  /**
   * The TLS handshake, and a request's headers and body, must arrive within this; and a connection with a
   * request or an answer under way may go this long without a byte moving either way.
   */
  requestTimeoutMs: number;
  /** A kept-alive connection with nothing to do is closed after this long. */
  idleTimeoutMs: number;
  /**
   * At this many connections, a new one makes room by closing another (connections.ts says which); when
   * none may go, the new one is closed as soon as it is accepted.
   */
  maxConnections: number;
  /**
   * How long a connection may be arriving (TLS handshake, headers, body) before the connection cap or the
   * byte budget may close it to serve another. kube-apiserver's requests arrive within milliseconds.
   */
  slowClientGraceMs: number;
  /** The largest request body read; larger is 413. */
  maxBodyBytes: number;
  /** Request bodies being received plus answers not yet written out, across all connections; past it, 503. */
  maxInflightBytes: number;
  /** Unsent answer bytes a connection may still hold when its next request arrives; past it, it is closed. */
  maxUnreadBytes: number;
}

const MIB = 1024 * 1024;

export const DEFAULT_TRANSPORT_LIMITS: Readonly<TransportLimits> = Object.freeze({
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 120_000,
  maxConnections: 256,
  slowClientGraceMs: 1000,
  maxBodyBytes: 4 * MIB,
  maxInflightBytes: 16 * MIB,
  maxUnreadBytes: 64 * 1024,
});

/** Seconds a client should wait before sending again after a 503; kube-apiserver's client honours it. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * Bytes held against `maxInflightBytes`, shared by every request. When a request does not fit, `reclaim`
 * is asked to hand bytes back (by closing connections whose bodies have stalled) before it is refused.
 */
export class ByteBudget {
  #used = 0;

  constructor(
    readonly limit: number,
    private readonly onChange: (used: number) => void,
    private readonly reclaim: (bytes: number) => void = () => undefined,
  ) {}

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit under the limit. */
  tryTake(bytes: number): boolean {
    if (this.#used + bytes > this.limit) this.reclaim(this.#used + bytes - this.limit);
    if (this.#used + bytes > this.limit) return false;
    this.change(bytes);
    return true;
  }

  /** Takes `bytes` whatever the limit: an answer already computed is sent, and the next request waits. */
  force(bytes: number): void {
    this.change(bytes);
  }

  give(bytes: number): void {
    this.change(-bytes);
  }

  private change(bytes: number): void {
    if (bytes === 0) return;
    this.#used += bytes;
    this.onChange(this.#used);
  }
}

/** One request's share of the budget: its body as it arrives, then its answer until written out. */
export class Reservation {
  #held = 0;
  #released = false;

  constructor(private readonly budget: ByteBudget) {}

  get held(): number {
    return this.#held;
  }

  take(bytes: number): boolean {
    if (this.#released) return true;
    if (!this.budget.tryTake(bytes)) return false;
    this.#held += bytes;
    return true;
  }

  /** At least `bytes` held from now on (the answer replaces the body, which is garbage by then). */
  growTo(bytes: number): void {
    if (this.#released || bytes <= this.#held) return;
    this.budget.force(bytes - this.#held);
    this.#held = bytes;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.budget.give(this.#held);
    this.#held = 0;
  }
}

/** A body over the budget found while streaming it (chunked, no content-length to check up front). */
export class BusyError extends Error {
  override readonly name = 'BusyError';
  readonly statusCode = HTTP_ERRORS.busy.status;
  readonly code = HTTP_ERRORS.busy.code;
}

export function busyBody(budget: ByteBudget): ErrorBody {
  return httpFailure(HTTP_ERRORS.busy(budget.used, budget.limit, RETRY_AFTER_SECONDS)).body;
}

/** Counts a body without a content-length against the reservation as it streams in. */
export function countingStream(reservation: Reservation): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      if (reservation.take(chunk.length)) callback(null, chunk);
      else callback(new BusyError('request bodies in flight are over the budget'));
    },
  });
}

/** The fields of a declared body: its length, or that it is chunked (length unknown until it ends). */
export function declaredBody(request: IncomingMessage): { length: number } | { chunked: true } | undefined {
  const length = request.headers['content-length'];
  if (length !== undefined) {
    const bytes = Number(length);
    return Number.isSafeInteger(bytes) && bytes > 0 ? { length: bytes } : undefined;
  }
  return request.headers['transfer-encoding'] === undefined ? undefined : { chunked: true };
}

/** What the HTTP parser's failures are answered with; the socket is closed after each. */
function clientErrorAnswer(
  code: string | undefined,
  limits: TransportLimits,
): { status: number; reason: RefusalReason; body: ErrorBody } {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { reason: 'request_timeout', ...httpFailure(HTTP_ERRORS.requestTimeout(limits.requestTimeoutMs / 1000)) };
    case 'HPE_HEADER_OVERFLOW':
      return { reason: 'bad_http', ...httpFailure(HTTP_ERRORS.headersTooLarge()) };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { reason: 'bad_http', ...httpFailure(HTTP_ERRORS.chunkExtensionsTooLarge()) };
    default:
      return { reason: 'bad_http', ...httpFailure(HTTP_ERRORS.badHttp(code)) };
  }
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
};

/**
 * Answers the HTTP parser's failures (and Node's request timeout) in our `{message, code}` shape, saying
 * `Connection: close` because the connection is closed after it: a client that reuses it would be reset.
 * Replaces Fastify's default, which answers `{error, message, statusCode}` without that header and destroys
 * the socket at once, possibly before the answer has left.
 */
export function clientErrorHandler(
  limits: TransportLimits,
  answeredEarly: WeakSet<Socket>,
  refused: (reason: RefusalReason) => void,
): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const answer = clientErrorAnswer(error.code, limits);
    refused(answer.reason);
    // As Node's own handler: never write into an answer already on its way (it would corrupt it), and a
    // request that has had its answer (413, 503 before its body ended) gets no second one.
    const inFlight: unknown = Reflect.get(socket, '_httpMessage');
    const headerSent = typeof inFlight === 'object' && inFlight !== null && Reflect.get(inFlight, 'headersSent') === true;
    if (!socket.writable || headerSent || answeredEarly.has(socket)) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify(answer.body);
    socket.write(
      `HTTP/1.1 ${answer.status} ${STATUS_TEXT[answer.status] ?? 'Error'}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
    // Ends after the answer is written out; one never read is dropped by the socket's inactivity timeout.
    socket.destroySoon();
  };
}

/** The socket under a request, when there is a real one (app.inject() has a stand-in without these). */
export function socketOf(raw: IncomingMessage | ServerResponse): Socket | undefined {
  const socket = raw.socket;
  return socket !== null && typeof socket.destroy === 'function' ? socket : undefined;
}

/** How often Node checks connections against the request timeout: a small share of it, at most a second. */
export function connectionsCheckingIntervalMs(limits: TransportLimits): number {
  return Math.max(10, Math.min(1000, Math.floor(limits.requestTimeoutMs / 10)));
}

/** Two checks after the request timeout: Node's check (above) finds a stalled request first. */
export function inactivityTimeoutMs(limits: TransportLimits): number {
  return limits.requestTimeoutMs + 2 * connectionsCheckingIntervalMs(limits);
}
