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
import { httpCall, HttpCallError, multipartFile, runtimeAgent, type HttpAnswer } from './http-call.js';
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
  const agent = runtimeAgent();
  const call = async (
    operation: EnvdOperation,
    what: string,
    url: string,
    init: Parameters<typeof httpCall>[2],
  ): Promise<HttpAnswer> => {
    try {
      const answer = await httpCall(agent, url, init, deps);
      deps.onRequest?.(operation, answer.status);
      return answer;
    } catch (error) {
      if (!(error instanceof HttpCallError)) throw error;
      if (error.status === undefined) {
        deps.onRequest?.(operation, 'error');
        throw new EnvdError('unavailable', `${what}: ${error.problem}`);
      }
      deps.onRequest?.(operation, error.status);
      throw new EnvdError(
        'unavailable',
        `${what}: answer HTTP ${error.status} unreadable: ${error.problem}`,
        error.status,
      );
    }
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
        const form = multipartFile('file', posix.basename(step.path), step.body);
        const { status } = await call('upload', what, filesUrl(endpoint, step.path), {
          method: 'POST',
          headers: { ...headers(endpoint), 'content-type': form.type },
          body: form.body,
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
        body: Buffer.from(JSON.stringify({ source: step.source, destination: step.destination }), 'utf8'),
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
