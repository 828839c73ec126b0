/**
 * How transport-level failures (body too large, not JSON, wrong content type) become HTTP answers. Every
 * answer is JSON `{message, code}` with a code from src/errors/: the API server quotes the message in the
 * error a `kubectl` user sees.
 */
import { HTTP_ERRORS, type Failure } from '../errors/index.js';
import { errorMessage } from '../errors/error-message.js';

export interface ErrorBody {
  message: string;
  code: string;
}

export interface HttpFailure {
  status: number;
  body: ErrorBody;
}

/** What the client sent, for messages that say what to send instead. */
export interface RequestFacts {
  contentType: string | undefined;
  bodyLimit: number;
}

export function httpFailure({ code, status, message }: Failure): HttpFailure {
  return { status, body: { message, code } };
}

/**
 * Fastify's own errors (FST_ERR_CTP_*) carry a 4xx `statusCode`: those are the client's fault and keep their
 * status, with our code and a message that says what to send instead. Anything else is ours: 500, so the API
 * server applies the webhook's failure policy instead of ever reading a 200 that admits.
 */
export function failureFor(error: unknown, request?: RequestFacts): HttpFailure {
  const status = numberField(error, 'statusCode');
  if (status === undefined || status < 400 || status >= 500)
    return httpFailure(HTTP_ERRORS.internal(errorMessage(error)));
  const known = request === undefined ? undefined : fastifyFailure(stringField(error, 'code'), request);
  return httpFailure(known ?? { ...HTTP_ERRORS.badRequest(errorMessage(error)), status });
}

function fastifyFailure(code: string | undefined, request: RequestFacts): Failure | undefined {
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return HTTP_ERRORS.unsupportedMediaType(request.contentType);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return HTTP_ERRORS.bodyTooLarge(request.bodyLimit);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return HTTP_ERRORS.bodyEmpty();
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // Fastify raises this for syntax errors and for prototype-poisoning keys alike.
      return HTTP_ERRORS.bodyNotJson();
    default:
      return undefined;
  }
}

function numberField(value: unknown, key: string): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const field: unknown = Reflect.get(value, key);
  return typeof field === 'number' ? field : undefined;
}

function stringField(value: unknown, key: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const field: unknown = Reflect.get(value, key);
  return typeof field === 'string' ? field : undefined;
}
