/**
 * The admission route, POST /mutate: it unwraps the request (its JSON text and the parsed body), calls the one
 * admission entry, `reviewAdmission`, wraps the answer, and records one log line and one set of metrics per
 * admission. A Fastify plugin of its own, so its body parser and error handler hold for this route only.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { reviewAdmission, type ReviewDeps } from '../admission/review.js';
import { reviewBytes } from '../admission/answers.js';
import { HTTP_ERRORS } from '../errors/index.js';
import type { Clock } from '../util/clock.js';
import { cutMessage, type Logger } from '../util/logger.js';
import { errorAnswer } from './error-answers.js';
import { failureFor, httpFailure, type ErrorBody, type HttpFailure } from './http-failure.js';
import { admissionLogFields, logRefusal, roundMs } from './log-lines.js';
import type { ServerMetrics } from './metrics.js';

export const MUTATE_PATH = '/mutate';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body's JSON text as received, for the admission's size rules; set by the admission route's parser. */
    reviewText: string | undefined;
  }
}

export interface AdmissionRouteOptions {
  review: ReviewDeps;
  bodyLimit: number;
  logger: Logger;
  metrics: ServerMetrics;
  /** The clock of the transport guard's `receivedAt`. */
  clock: Clock;
}

export function admissionRoute(
  app: FastifyInstance,
  options: AdmissionRouteOptions,
  done: (error?: Error) => void,
): void {
  app.decorateRequest('reviewText', undefined);
  // Fastify's own JSON parser (its errors, its prototype-poisoning refusals), keeping the text beside the body.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, payload, parsed) => {
    const text = payload as string;
    request.reviewText = text;
    void parseJson(request, text, parsed);
  });
  const refused = (path: string, failure: HttpFailure): void => logRefusal(options.logger, path, failure);
  app.setErrorHandler(
    errorAnswer({
      bodyLimit: options.bodyLimit,
      metrics: options.metrics,
      refused,
      failed: countFailure(options.metrics, options.clock),
    }),
  );
  app.post(MUTATE_PATH, admissionHandler(options));
  done();
}

/** The handler of POST /mutate. */
export function admissionHandler(
  options: AdmissionRouteOptions,
): (request: FastifyRequest, reply: FastifyReply) => Promise<Buffer | ErrorBody> {
  const { logger, metrics, clock } = options;
  return async function handleAdmission(request, reply) {
    // Taken off the request: once measured, the text is not kept while the review goes on.
    const text = request.reviewText;
    request.reviewText = undefined;
    try {
      const outcome = await reviewAdmission(request.body, options.review, text);
      const ms = elapsedMs(request, clock);
      if (outcome.kind === 'bad-request') {
        metrics.admissionFailed('bad_request', ms / 1000);
        const { status, body } = httpFailure(HTTP_ERRORS.reviewMalformed(outcome.message));
        logger.warn(
          { durationMs: roundMs(ms), code: body.code, message: cutMessage(body.message) },
          'admission refused',
        );
        void reply.code(status);
        return body;
      }
      metrics.admission(outcome.summary, ms / 1000);
      logger.info(admissionLogFields(outcome.summary, ms), 'admission');
      void reply.type('application/json; charset=utf-8');
      return reviewBytes(outcome.review);
    } catch (error) {
      const ms = elapsedMs(request, clock);
      metrics.admissionFailed('error', ms / 1000);
      logger.error({ err: error, durationMs: roundMs(ms) }, 'admission failed');
      const { status, body } = failureFor(error);
      void reply.code(status);
      return body;
    }
  };
}

/** A review refused before the handler ran (its body) counts as a failed admission. */
function countFailure(metrics: ServerMetrics, clock: Clock): (request: FastifyRequest, failure: HttpFailure) => void {
  return (request, failure) =>
    metrics.admissionFailed(failure.status >= 500 ? 'error' : 'bad_request', elapsedMs(request, clock) / 1000);
}

function elapsedMs(request: FastifyRequest, clock: Clock): number {
  const receivedAt = request.transport?.receivedAt;
  return receivedAt === undefined ? 0 : clock.monotonic() - receivedAt;
}
