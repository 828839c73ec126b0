/**
 * The part of envd's file API that delivery uses, as its published spec says (e2b-dev/infra,
 * packages/envd/spec/envd.yaml and spec/filesystem/filesystem.proto):
 *
 * - `GET /files?path=&username=`: the file's bytes, 404 when it does not exist;
 * - `POST /files?path=&username=`: multipart upload, the part named `file`; creates or truncates the target in
 *   place, owned by `username`, mode 0666 less envd's umask;
 * - `POST /filesystem.Filesystem/Move`: Connect protocol, JSON `{"source","destination"}`, the user in
 *   `Authorization: Basic`.
 *
 * Every request carries the access token as `X-Access-Token`. Redirects are not followed: a runtime URL that
 * redirects is not envd. Answers are read up to a bound and under a timeout, so a hostile or broken server can
 * neither hang a delivery nor fill memory. Errors name the operation, the path and the status, never a body
 * (envd may echo what it was sent) or a token.
 */
import { posix } from 'node:path';
import type { DeliveryStep, ReadyState } from './plan.js';

/** `unauthorized` and `rejected` wait for the Sandbox to change; `unavailable` is retried with backoff. */
export type EnvdErrorKind = 'unauthorized' | 'rejected' | 'unavailable';

export class EnvdError extends Error {
  override readonly name = 'EnvdError';
  constructor(
    readonly kind: EnvdErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface EnvdEndpoint {
  runtimeUrl: string;
  accessToken: string | undefined;
  /** Owner of the files written, and the user Move runs as. */
  user: string;
}

export type EnvdOperation = 'get' | 'upload' | 'move';

export interface EnvdFilesDeps {
  fetch: typeof fetch;
  /** Bounds a whole request, its answer's body included. */
  timeoutMs: number;
  /** The most of an answer's body that is read; past it the answer counts as broken. */
  maxBodyBytes: number;
  /** Each request's outcome, for the requests metric: an HTTP status, or 'error' when none came. */
  onRequest?: (operation: EnvdOperation, outcome: number | 'error') => void;
}

export interface EnvdFiles {
  readReady(endpoint: EnvdEndpoint, path: string): Promise<ReadyState>;
  run(endpoint: EnvdEndpoint, step: DeliveryStep): Promise<void>;
}

export function envdFiles(deps: EnvdFilesDeps): EnvdFiles {
  const call = async (
    operation: EnvdOperation,
    what: string,
    url: string,
    init: RequestInit,
  ): Promise<{ status: number; body: string }> => {
    let response: Response;
    const signal = AbortSignal.timeout(deps.timeoutMs);
    try {
      response = await deps.fetch(url, { ...init, redirect: 'manual', signal });
    } catch (error) {
      deps.onRequest?.(operation, 'error');
      throw new EnvdError('unavailable', `${what}: ${transportProblem(error, signal)}`);
    }
    deps.onRequest?.(operation, response.status);
    let body: string;
    try {
      body = await readBounded(response, deps.maxBodyBytes);
    } catch (error) {
      throw new EnvdError(
        'unavailable',
        `${what}: answer HTTP ${response.status} unreadable: ${transportProblem(error, signal)}`,
        response.status,
      );
    }
    return { status: response.status, body };
  };

  return {
    async readReady(endpoint, path) {
      const what = `GET ${path}`;
      const { status, body } = await call('get', what, filesUrl(endpoint, path), {
        method: 'GET',
        headers: headers(endpoint),
      });
      if (status === 404) return { found: false };
      if (status === 200) return { found: true, body };
      throw statusError(what, status);
    },
    async run(endpoint, step) {
      if (step.op === 'upload') {
        const what = `upload ${step.path}`;
        const form = new FormData();
        form.append('file', new Blob([step.body]), posix.basename(step.path));
        const { status } = await call('upload', what, filesUrl(endpoint, step.path), {
          method: 'POST',
          headers: headers(endpoint),
          body: form,
        });
        if (status < 200 || status > 299) throw statusError(what, status);
        return;
      }
      const what = `move ${step.source} to ${step.destination}`;
      const { status } = await call('move', what, `${endpoint.runtimeUrl}/filesystem.Filesystem/Move`, {
        method: 'POST',
        headers: {
          ...headers(endpoint),
          'content-type': 'application/json',
          'connect-protocol-version': '1',
          authorization: `Basic ${Buffer.from(`${endpoint.user}:`).toString('base64')}`,
        },
        body: JSON.stringify({ source: step.source, destination: step.destination }),
      });
      // A missing source means the upload before it was lost (a new, empty volume): plan again.
      if (status === 404) throw new EnvdError('unavailable', `${what}: HTTP 404`, status);
      if (status !== 200) throw statusError(what, status);
    },
  };
}

function filesUrl(endpoint: EnvdEndpoint, path: string): string {
  const query = new URLSearchParams({ path, username: endpoint.user });
  return `${endpoint.runtimeUrl}/files?${query.toString()}`;
}

function headers(endpoint: EnvdEndpoint): Record<string, string> {
  return endpoint.accessToken === undefined ? {} : { 'x-access-token': endpoint.accessToken };
}

function statusError(what: string, status: number): EnvdError {
  if (status === 401 || status === 403)
    return new EnvdError('unauthorized', `${what}: HTTP ${status} (token refused)`, status);
  if (status >= 500 || status === 408 || status === 429)
    return new EnvdError('unavailable', `${what}: HTTP ${status}`, status);
  if (status >= 300 && status < 400)
    return new EnvdError('rejected', `${what}: HTTP ${status} (redirects are not followed)`, status);
  return new EnvdError('rejected', `${what}: HTTP ${status}`, status);
}

function transportProblem(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return 'timed out';
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  // Only the error's code: a message can quote what the server sent.
  return typeof code === 'string' && /^[A-Z_]{1,40}$/.test(code) ? code : 'connection failed';
}

/** The answer's body as text, read no further than `limit` bytes; the rest is cancelled, not drained. */
async function readBounded(response: Response, limit: number): Promise<string> {
  if (response.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Leaving the loop early cancels the stream: the rest of a huge answer is never read.
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) throw Object.assign(new Error('answer too large'), { code: 'BODY_TOO_LARGE' });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
