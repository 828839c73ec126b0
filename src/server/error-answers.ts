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
  /** Called after `refused` (but for a 503 busy, counted as a refusal), for what a route counts of its own failures. */
  failed?(request: FastifyRequest, failure: HttpFailure): void;
}

/** Fastify's error handler: the error's answer in our `{message, code}` shape. */
export function errorAnswer(
  options: ErrorAnswerOptions,
): (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => ErrorBody {
  return function answerError(error, request, reply) {
    const path = request.routeOptions.url ?? request.url;
    if (error instanceof BusyError) {
      options.metrics.refused('busy');
      options.refused(path, error.failure);
      // The body was being read when the budget ran out and the rest is left unread: end the connection.
      void reply
        .code(error.failure.status)
        .header('retry-after', String(RETRY_AFTER_SECONDS))
        .header('connection', 'close');
      return error.failure.body;
    }
    const failure = failureFor(error, { contentType: request.headers['content-type'], bodyLimit: options.bodyLimit });
    options.refused(path, failure);
    options.failed?.(request, failure);
    void reply.code(failure.status);
    return failure.body;
  };
}

/**
 * Fastify's not-found handler. `routeMethods` lists the methods each served path answers: another method there
 * gets 405 with an Allow header rather than a misleading 404.
 */
export function notFoundAnswer(
  routeMethods: ReadonlyMap<string, string>,
  refused: (path: string, failure: HttpFailure) => void,
): (request: FastifyRequest, reply: FastifyReply) => ErrorBody {
  return function answerNotFound(request, reply) {
    const path = request.url.split('?', 1)[0] ?? request.url;
    const allowed = routeMethods.get(path);
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
