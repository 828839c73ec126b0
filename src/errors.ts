/**
 * Every error and denial sandbox-injector gives, listed once: a stable code (one prefix, `SI_`), the HTTP or
 * admission status it goes out with, and how its message is built. Code elsewhere builds failures only from
 * here, so a code means one thing everywhere (log lines, the denials counter, docs/errors.md).
 *
 * - denial: an AdmissionReview answered `allowed: false`, with this status in `response.status.code`;
 * - http: a request refused before there is a review to answer, with this HTTP status;
 * - startup: the process refuses to start (its `status` is the exit status), or refuses a file it reads.
 */
export type FailureKind = 'denial' | 'http' | 'startup';

export interface Failure {
  code: string;
  status: number;
  message: string;
}

export interface FailureSpec<A extends unknown[]> {
  readonly code: string;
  readonly status: number;
  readonly kind: FailureKind;
  /** What the failure means, for docs/errors.md. */
  readonly meaning: string;
  (...args: A): Failure;
}

function define<A extends unknown[]>(
  code: string,
  status: number,
  kind: FailureKind,
  meaning: string,
  message: (...args: A) => string,
): FailureSpec<A> {
  const make = (...args: A): Failure => ({ code, status, message: message(...args) });
  return Object.assign(make, { code, status, kind, meaning });
}

export const DENIALS = {
  podMalformed: define(
    'SI_POD_MALFORMED',
    400,
    'denial',
    'a field of the pod that the injection reads has the wrong type',
    (detail: string) => `pod is malformed: ${detail}`,
  ),
  podTooLarge: define(
    'SI_POD_TOO_LARGE',
    400,
    'denial',
    'the pod is past a limit kube-apiserver enforces (annotations over 256 KiB), so it could never be created',
    (what: string) => `pod is too large: ${what}`,
  ),
  policyInvalid: define(
    'SI_POLICY_INVALID',
    400,
    'denial',
    'an EnvVarsInjectionPolicy value other than None or Auto, wherever it was set',
    (field: string, value: unknown, allowed: readonly string[]) =>
      `${field}: ${JSON.stringify(value)} is not a valid EnvVarsInjectionPolicy (allowed: ${allowed.join(', ')})`,
  ),
  sandboxSpecInvalid: define(
    'SI_SANDBOX_SPEC_INVALID',
    400,
    'denial',
    "the owning Sandbox's spec.runtimes is not a list of named runtimes",
    (sandbox: string, detail: string) => `${sandbox}: ${detail}`,
  ),
  creatorUntrusted: define(
    'SI_CREATOR_UNTRUSTED',
    403,
    'denial',
    'a pod claims a Sandbox owner but its creator is not in --trusted-creators',
    (creator: string, sandbox: string) =>
      `${creator} may not create a pod owned by ${sandbox}: only the webhook's trusted creators may (--trusted-creators)`,
  ),
  sandboxNotFound: define(
    'SI_SANDBOX_NOT_FOUND',
    404,
    'denial',
    "the pod's controller owner names a Sandbox that does not exist (or has another uid)",
    (sandbox: string, uid: string) => `owner ${sandbox} (uid ${uid}) not found`,
  ),
  sandboxLookupFailed: define(
    'SI_SANDBOX_LOOKUP_FAILED',
    500,
    'denial',
    'the owning Sandbox could not be read from the API server',
    (sandbox: string, reason: string) => `cannot look up owner ${sandbox}: ${reason}`,
  ),
  runtimeConfigUnusable: define(
    'SI_RUNTIME_CONFIG_UNUSABLE',
    500,
    'denial',
    'an asked runtime has no (or an empty) key in the injection ConfigMap, or a bad key never seen valid',
    (problems: readonly string[]) => problems.join('; '),
  ),
} as const;

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
  bodyEmpty: define('SI_BODY_EMPTY', 400, 'http', 'a POST without a body', () =>
    'request body is empty: send an AdmissionReview as application/json',
  ),
  unsupportedMediaType: define(
    'SI_UNSUPPORTED_MEDIA_TYPE',
    415,
    'http',
    'a content type other than application/json',
    (contentType: string | undefined) =>
      `content-type ${contentType ?? '(none)'} is not supported: send an AdmissionReview as application/json`,
  ),
  bodyTooLarge: define('SI_BODY_TOO_LARGE', 413, 'http', 'a body over --max-body-bytes', (limit: number) =>
    `request body is larger than the ${limit} byte limit`,
  ),
  badRequest: define(
    'SI_BAD_REQUEST',
    400,
    'http',
    'any other request the framework refuses before a handler runs (its own status, 4xx)',
    (message: string) => message,
  ),
  routeNotFound: define('SI_ROUTE_NOT_FOUND', 404, 'http', 'a path the server does not serve', (method: string, path: string) =>
    `no route ${method} ${path}`,
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
    'headers and body not received within --request-timeout-seconds',
    (seconds: number) => `the request was not received within ${seconds}s`,
  ),
  headersTooLarge: define('SI_HEADERS_TOO_LARGE', 431, 'http', "request headers over Node's 16 KiB limit", () =>
    'request headers are too large',
  ),
  chunkExtensionsTooLarge: define(
    'SI_CHUNK_EXTENSIONS_TOO_LARGE',
    413,
    'http',
    "chunk extensions over Node's limit",
    () => 'chunk extensions are too large',
  ),
  badHttp: define('SI_BAD_HTTP', 400, 'http', 'a request the HTTP parser cannot read', (parserCode: string | undefined) =>
    `malformed HTTP request${parserCode === undefined ? '' : ` (${parserCode})`}`,
  ),
  internal: define(
    'SI_INTERNAL',
    500,
    'http',
    "the review failed inside the server (a bug): never a 200 that admits; the webhook's failurePolicy decides",
    (message: string) => `internal error: ${message}`,
  ),
} as const;

export const STARTUP_ERRORS = {
  optionsInvalid: define(
    'SI_OPTIONS_INVALID',
    2,
    'startup',
    'a flag or environment variable of serve is unknown, malformed or conflicts with another (exit 2)',
    (problems: readonly string[]) => problems.join('; '),
  ),
  configMapManifestInvalid: define(
    'SI_CONFIGMAP_MANIFEST_INVALID',
    1,
    'startup',
    'a --config-file is not exactly one ConfigMap with string values (serve keeps its last valid data)',
    (origin: string, detail: string) => `${origin}: ${detail}`,
  ),
  tlsUnreadable: define('SI_TLS_READ', 1, 'startup', 'a certificate, key or client CA file cannot be read (a reload keeps the pair in use)', (path: string, reason: string) =>
    `cannot read ${path}: ${reason}`,
  ),
  tlsCertificateInvalid: define('SI_TLS_CERT', 1, 'startup', 'the serving certificate is not valid PEM', (what: string, reason: string) =>
    `${what} is not valid PEM: ${reason}`,
  ),
  tlsKeyInvalid: define('SI_TLS_KEY', 1, 'startup', 'the serving key is not valid PEM', (what: string, reason: string) =>
    `${what} is not valid PEM: ${reason}`,
  ),
  tlsKeyMismatch: define('SI_TLS_KEY_MISMATCH', 1, 'startup', 'the key does not belong to the certificate', (key: string, cert: string) =>
    `private key ${key} does not match certificate ${cert}`,
  ),
  tlsClientCaInvalid: define('SI_TLS_CLIENT_CA', 1, 'startup', 'the --tls-client-ca-file is not valid PEM', (what: string, reason: string) =>
    `${what} is not valid PEM: ${reason}`,
  ),
  certificateConflict: define(
    'SI_CERT_CONFLICT',
    1,
    'startup',
    'self-managed certificates: the Secret or the caBundle kept changing under every read-modify-write attempt',
    (what: string) => what,
  ),
} as const;

/**
 * The Kubernetes Status reason (metav1.StatusReason) a denial goes out with, from its status: 5xx is the
 * webhook's own failure, and any 4xx without a reason of its own is the pod's fault.
 */
export function statusReason(status: number): string {
  if (status >= 500) return 'InternalError';
  return STATUS_REASONS.get(status) ?? 'BadRequest';
}

const STATUS_REASONS: ReadonlyMap<number, string> = new Map([
  [403, 'Forbidden'],
  [404, 'NotFound'],
]);

/** What the docs list of each failure. */
export type CatalogueEntry = Pick<FailureSpec<never[]>, 'code' | 'status' | 'kind' | 'meaning'>;

/** Every failure, for the docs test; codes are unique (checked there too). */
export const CATALOGUE: readonly CatalogueEntry[] = [
  ...Object.values(DENIALS),
  ...Object.values(HTTP_ERRORS),
  ...Object.values(STARTUP_ERRORS),
];
