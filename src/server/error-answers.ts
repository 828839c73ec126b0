/**
 * What no route handler answers: a path or method the server does not serve (404, 405), and an error thrown
 * before a handler ran (body parsing: 400, 413, 415; the byte budget: 503). Each answer is logged as
 * `request refused`, as the parser's own failures are (client-errors.ts).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HTTP_ERRORS } from '../errors/index.js';
import { BusyError } from './byte-budget.js';
import { failureFor, httpFailure, type ErrorBody, type HttpFailure } from './http-failure.js';
import type { ServerMetrics } from './metrics.js';
import { RETRY_AFTER_SECONDS } from './transport.js';

export interface ErrorAnswerOptions {
  bodyLimit: number;
  metrics: ServerMetrics;
  refused(path: string, failure: HttpFailure): void;
}

/** Fastify's error handler: the error's answer in our `{message, code}` shape. */
export function errorAnswer(
  options: ErrorAnswerOptions,
): (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => ErrorBody {
  return function answerError(error, request, reply) {
    const path = request.routeOptions.url ?? request.url;
    // A chunked body counted as it streamed in (transport-guard.ts): it was being read when the budget ran out.
    if (error instanceof BusyError) return answerBusy(reply, path, error.failure, 'close', options);
    const failure = failureFor(error, { contentType: request.headers['content-type'], bodyLimit: options.bodyLimit });
    options.refused(path, failure);
    void reply.code(failure.status);
    return failure.body;
  };
}

/**
 * The answer to a request over the byte budget, made and counted here only: 503 with Retry-After, which
 * kube-apiserver honours before it sends the review again. `connection` is what becomes of the connection:
 * `keep` when none of the body has been read, since Node reads it away after the answer and closing could reset
 * the connection before the client has read this answer; `close` when the body was being read as the budget ran
 * out, since the rest is left unread and only the end of the connection frees it.
 */
export function answerBusy(
  reply: FastifyReply,
  path: string,
  failure: HttpFailure,
  connection: 'keep' | 'close',
  options: Pick<ErrorAnswerOptions, 'metrics' | 'refused'>,
): ErrorBody {
  options.metrics.refused('busy');
  options.refused(path, failure);
  void reply.code(failure.status).header('retry-after', String(RETRY_AFTER_SECONDS));
  if (connection === 'close') void reply.header('connection', 'close');
  return failure.body;
}

/**
 * Fastify's not-found handler. `routeMethods` lists the methods each served path answers: another method there
 * gets 405 with an Allow header rather than a misleading 404.
 */
export function notFoundAnswer(
  routeMethods: ReadonlyMap<string, readonly string[]>,
  refused: (path: string, failure: HttpFailure) => void,
): (request: FastifyRequest, reply: FastifyReply) => ErrorBody {
  return function answerNotFound(request, reply) {
    const path = request.url.split('?', 1)[0] ?? request.url;
    const allowed = routeMethods.get(path)?.join(', ');
    const failure = httpFailure(
      allowed === undefined
        ? HTTP_ERRORS.routeNotFound(request.method, path)
        : HTTP_ERRORS.methodNotAllowed(request.method, path, allowed),
    );
    refused(path, failure);
    void reply.code(failure.status);
    if (allowed !== undefined) void reply.header('allow', allowed);
    return failure.body;
  };
}
