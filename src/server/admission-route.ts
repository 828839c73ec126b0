/**
 * The admission route, POST /mutate: it unwraps the request (its JSON text and the parsed body), calls the one
 * admission entry, `reviewAdmission`, wraps the answer, and records one log line and one set of metrics per
 * admission. A Fastify plugin of its own, so its body parser and its count of failed admissions hold for this
 * route only; what fails before the handler runs is answered by the app's error handler (error-answers.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { reviewAdmission, type ReviewDeps } from '../admission/review.js';
import { reviewBytes } from '../admission/answers.js';
import { HTTP_ERRORS } from '../errors/index.js';
import type { Clock } from '../time/clock.js';
import { cutMessage, type Logger } from '../logging/logger.js';
import { failureFor, httpFailure, type ErrorBody } from './http-failure.js';
import { admissionLogFields, roundMs } from './log-lines.js';
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
  app.addHook('onSend', countFailedAdmission(options.metrics, options.clock));
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
      logger.error({ err: error, durationMs: roundMs(ms) }, 'admission failed');
      const { status, body } = failureFor(error);
      void reply.code(status);
      return body;
    }
  };
}

/**
 * Every answer of the route other than a review is a failed admission, whoever gave it: the handler (a review
 * that is not one, a failure of ours) or the error handler (a body that is not JSON, too large, of another type).
 * The byte budget's 503 is not one: it is a transport refusal, and counted as that (error-answers.ts).
 */
function countFailedAdmission(metrics: ServerMetrics, clock: Clock): onSendHookHandler {
  return (request, reply, payload, done) => {
    const status = reply.statusCode;
    if (status !== 200 && status !== HTTP_ERRORS.busy.status) {
      metrics.admissionFailed(status >= 500 ? 'error' : 'bad_request', elapsedMs(request, clock) / 1000);
    }
    done(null, payload);
  };
}

function elapsedMs(request: FastifyRequest, clock: Clock): number {
  const receivedAt = request.transport?.receivedAt;
  return receivedAt === undefined ? 0 : clock.monotonic() - receivedAt;
}
