/** HTTP errors: a request refused before there is a review to answer, with this HTTP status. */
import { define } from './failure.js';

export const HTTP_ERRORS = {
  reviewMalformed: define(
    'SI_REVIEW_MALFORMED',
    400,
    'http',
    'the body is JSON but not an AdmissionReview (no request, no uid, wrong kind or apiVersion)',
    (detail: string) => detail,
  ),
  bodyNotJson: define(
    'SI_BODY_NOT_JSON',
    400,
    'http',
    'the body is not JSON, or holds a __proto__ or constructor.prototype key',
    () => 'request body is not valid JSON (or holds a forbidden __proto__ or constructor.prototype key)',
  ),
  bodyEmpty: define(
    'SI_BODY_EMPTY',
    400,
    'http',
    'a POST without a body',
    () => 'request body is empty: send an AdmissionReview as application/json',
  ),
  unsupportedMediaType: define(
    'SI_UNSUPPORTED_MEDIA_TYPE',
    415,
    'http',
    'a content type other than application/json',
    (contentType: string | undefined) =>
      `content-type ${contentType ?? '(none)'} is not supported: send an AdmissionReview as application/json`,
  ),
  bodyTooLarge: define(
    'SI_BODY_TOO_LARGE',
    413,
    'http',
    'a body over --max-body-bytes',
    (limit: number) => `request body is larger than the ${limit} byte limit`,
  ),
  badRequest: define(
    'SI_BAD_REQUEST',
    400,
    'http',
    'any other request the framework refuses before a handler runs (its own status, 4xx)',
    (message: string) => message,
  ),
  routeNotFound: define(
    'SI_ROUTE_NOT_FOUND',
    404,
    'http',
    'a path the server does not serve',
    (method: string, path: string) => `no route ${method} ${path}`,
  ),
  methodNotAllowed: define(
    'SI_METHOD_NOT_ALLOWED',
    405,
    'http',
    'a known path with another method (the Allow header lists the right ones)',
    (method: string, path: string, allowed: string) => `${method} is not allowed on ${path}; use ${allowed}`,
  ),
  busy: define(
    'SI_BUSY',
    503,
    'http',
    'request bodies and unsent answers in flight are over --max-inflight-bytes; retry after Retry-After',
    (used: number, limit: number, retryAfterSeconds: number) =>
      `the webhook is busy: ${used} bytes of requests and answers are in flight (limit ${limit}); retry after ${retryAfterSeconds}s`,
  ),
  requestTimeout: define(
    'SI_REQUEST_TIMEOUT',
    408,
    'http',
    'headers and body not received within --request-timeout',
    (seconds: number) => `the request was not received within ${seconds}s`,
  ),
  headersTooLarge: define(
    'SI_HEADERS_TOO_LARGE',
    431,
    'http',
    "request headers over Node's 16 KiB limit",
    () => 'request headers are too large',
  ),
  chunkExtensionsTooLarge: define(
    'SI_CHUNK_EXTENSIONS_TOO_LARGE',
    413,
    'http',
    "chunk extensions over Node's limit",
    () => 'chunk extensions are too large',
  ),
  badHttp: define(
    'SI_BAD_HTTP',
    400,
    'http',
    'a request the HTTP parser cannot read',
    (parserCode: string | undefined) => `malformed HTTP request${parserCode === undefined ? '' : ` (${parserCode})`}`,
  ),
  internal: define(
    'SI_INTERNAL',
    500,
    'http',
    "the review failed inside the server (a bug): never a 200 that admits; the webhook's failurePolicy decides",
    (message: string) => `internal error: ${message}`,
  ),
} as const;
