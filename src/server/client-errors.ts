/**
 * The HTTP parser's failures (and Node's request timeout), answered in our `{message, code}` shape. They come
 * before Fastify has a request, so they are written to the socket here, saying `Connection: close` because the
 * connection is closed after it: a client that reuses it would be reset. This replaces Fastify's default, which
 * answers `{error, message, statusCode}` without that header and destroys the socket at once, possibly before
 * the answer has left.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { HTTP_ERRORS } from '../errors/index.js';
import { httpFailure, type HttpFailure } from './http-failure.js';
import type { RefusalReason } from './metrics.js';
import type { TransportLimits } from './transport.js';

/**
 * Per connection: the answer being written, and whether the last request was answered before its body ended
 * (413, 503). A raw answer may go out only when neither holds: writing into an answer already on its way would
 * corrupt it, and a request that has had its answer gets no second one.
 */
export class AnswersInFlight {
  readonly #writing = new WeakMap<Socket, ServerResponse>();
  readonly #answeredEarly = new WeakSet<Socket>();

  started(socket: Socket, response: ServerResponse): void {
    this.#answeredEarly.delete(socket);
    this.#writing.set(socket, response);
  }

  finished(socket: Socket, response: ServerResponse, requestComplete: boolean): void {
    if (this.#writing.get(socket) === response) this.#writing.delete(socket);
    if (!requestComplete) this.#answeredEarly.add(socket);
  }

  mayAnswer(socket: Socket): boolean {
    return socket.writable && this.#writing.get(socket)?.headersSent !== true && !this.#answeredEarly.has(socket);
  }
}

export interface ClientRefusal extends HttpFailure {
  reason: RefusalReason;
}

/** What each parser failure is answered with. */
function clientErrorAnswer(code: string | undefined, limits: TransportLimits): ClientRefusal {
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

/** Fastify's `clientErrorHandler`; `refused` counts and logs each answer given. */
export function clientErrorHandler(
  limits: TransportLimits,
  answers: AnswersInFlight,
  refused: (refusal: ClientRefusal) => void,
): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const answer = clientErrorAnswer(error.code, limits);
    refused(answer);
    if (!answers.mayAnswer(socket)) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify(answer.body);
    socket.write(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
    // Ends after the answer is written out; one never read is dropped by the socket's inactivity timeout.
    socket.destroySoon();
  };
}
