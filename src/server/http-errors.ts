/**
 * How transport-level failures (body too large, not JSON, wrong content type) become HTTP answers. Every
 * answer is JSON `{message, code}`: the API server quotes the message in the error a `kubectl` user sees.
 */

export interface ErrorBody {
  message: string;
  code: string;
}

export interface HttpFailure {
  status: number;
  body: ErrorBody;
}

/**
 * Fastify's own errors (FST_ERR_CTP_*) carry a 4xx `statusCode` and a code: those are the client's fault
 * and keep their status. Anything else is ours: 500, so the API server applies the webhook's failure
 * policy instead of ever reading a 200 that admits.
 */
export function failureFor(error: unknown, request?: RequestFacts): HttpFailure {
  const status = numberField(error, 'statusCode');
  const message = error instanceof Error ? error.message : String(error);
  if (status !== undefined && status >= 400 && status < 500) {
    const code = stringField(error, 'code') ?? 'ERR_BAD_REQUEST';
    return { status, body: { message: clearerMessage(code, message, request), code } };
  }
  return { status: 500, body: { message: `internal error: ${message}`, code: 'ERR_INTERNAL' } };
}

/** What the client sent, for messages that say what to send instead. */
export interface RequestFacts {
  contentType: string | undefined;
  bodyLimit: number;
}

/** Fastify's messages are terse ("Unsupported Media Type"); say what was wrong and what is expected. */
function clearerMessage(code: string, message: string, request: RequestFacts | undefined): string {
  if (request === undefined) return message;
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return `content-type ${request.contentType ?? '(none)'} is not supported: send an AdmissionReview as application/json`;
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `request body is larger than the ${request.bodyLimit} byte limit`;
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'request body is empty: send an AdmissionReview as application/json';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      // Fastify raises this for syntax errors and for prototype-poisoning keys alike.
      return 'request body is not valid JSON (or holds a forbidden __proto__ or constructor.prototype key)';
    default:
      return message;
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
