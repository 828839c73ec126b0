/**
 * The part of envd's file API that delivery uses, as its published spec says (e2b-dev/infra,
 * packages/envd/spec/envd.yaml and spec/filesystem/filesystem.proto):
 *
 * - `GET /files?path=&username=`: the file's bytes, 404 when it does not exist;
 * - `POST /files?username=`: multipart upload; without `path`, each part named `file` is written to the path
 *   its file name gives (since envd 0.1.2, as the E2B SDKs write several files at once), in order, each
 *   created or truncated in place, owned by `username`, mode 0666 less envd's umask;
 * - `POST /filesystem.Filesystem/Move` `{"source","destination"}`, `.../ListDir` `{"path","depth"}` and
 *   `.../Remove` `{"path"}`: Connect protocol, unary, JSON, the user in `Authorization: Basic`. Remove is a
 *   remove-all: a path that is not there is no error.
 *
 * Every request carries the access token as `X-Access-Token`, and is sent only while the caller's lease term
 * is fresh, checked right before it goes; the term's end aborts it. Redirects are not followed: a runtime URL
 * that redirects is not envd. Answers are read up to a bound and under a timeout, so a hostile or broken server
 * can neither hang a delivery nor fill memory. Errors name the operation, the path and the status, never a
 * body (envd may echo what it was sent) or a token.
 */
import type { Agent as HttpsAgent } from 'node:https';
import { posix } from 'node:path';
import { CatalogueError, DELIVERY_FAILURES } from '../../errors/index.js';
import type { Clock } from '../../time/clock.js';
import type { LeaderTerm } from '../leadership/leader-election.js';
import {
  httpCall,
  HttpCallError,
  multipartForm,
  requestTarget,
  runtimeAgent,
  type HttpAnswer,
  type RequestTarget,
} from './http-call.js';
import type { DeliveryStep, ReadyState } from './plan.js';

/**
 * The catalogue's failure of each kind. `unauthorized` and `rejected` wait for the Sandbox to change;
 * `unavailable` is retried with backoff; `aborted`: the lease term ended (or was not provably fresh), so nothing
 * more is sent in it.
 */
export const ENVD_FAILURES = {
  unauthorized: DELIVERY_FAILURES.envdUnauthorized,
  rejected: DELIVERY_FAILURES.envdRejected,
  unavailable: DELIVERY_FAILURES.envdUnavailable,
  aborted: DELIVERY_FAILURES.leaseTermEnded,
} as const;

export type EnvdErrorKind = keyof typeof ENVD_FAILURES;

/** The pod's envd, as a claim's requests reach it. */
export interface RuntimeEndpoint {
  /** Base URL of the pod's envd, without a trailing slash. */
  url: string;
  /** Set for a TLS runtime: the agent that verifies it (and presents the client certificate). */
  tlsAgent: HttpsAgent | undefined;
  /** Sent as X-Access-Token; undefined sends none. */
  accessToken: string | undefined;
}

/** A request to envd that failed: `what` names the operation and the path, `problem` what went wrong. */
export class EnvdError extends CatalogueError<undefined> {
  constructor(
    readonly kind: EnvdErrorKind,
    what: string,
    problem: string,
  ) {
    super(ENVD_FAILURES[kind](what, problem));
  }
}

export type EnvdOperation = 'get' | 'upload' | 'move' | 'list' | 'remove';

export interface EnvdFilesDeps {
  /** Bounds a whole request, its answer's body included. */
  timeoutMs: number;
  /** The most of an answer's body that is read; past it the answer counts as broken. */
  maxBodyBytes: number;
  /** Owner of the files written, and the user Move, ListDir and Remove run as. */
  user: string;
  /** Each request's outcome, for the requests metric: an HTTP status, or 'error' when none came. */
  onRequest?: (operation: EnvdOperation, outcome: number | 'error') => void;
  /** What the timeout is counted on; default systemClock. */
  clock?: Clock;
}

export interface EnvdFiles {
  /** A small file's content (.env_ready, .env_recycled), bounded by the client; not found when it is not there. */
  readFile(endpoint: RuntimeEndpoint, path: string, term: LeaderTerm): Promise<ReadyState>;
  /** The names in folder `path` (one level); a missing folder is empty. */
  list(endpoint: RuntimeEndpoint, path: string, term: LeaderTerm): Promise<FolderEntry[]>;
  run(endpoint: RuntimeEndpoint, step: DeliveryStep, term: LeaderTerm): Promise<void>;
}

export function envdFiles(deps: EnvdFilesDeps): EnvdFiles {
  const plainAgent = runtimeAgent();
  const call = async (
    operation: EnvdOperation,
    what: string,
    endpoint: RuntimeEndpoint,
    path: string,
    init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: Buffer },
    term: LeaderTerm,
  ): Promise<HttpAnswer> => {
    if (!term.fresh() || term.signal.aborted)
      throw new EnvdError('aborted', what, 'not sent, the Lease is not provably held');
    try {
      const answer = await httpCall(
        endpoint.tlsAgent ?? plainAgent,
        targetOf(endpoint, path),
        { ...init, headers: { ...tokenHeader(endpoint), ...init.headers }, signal: term.signal },
        deps,
        deps.clock,
      );
      deps.onRequest?.(operation, answer.status);
      return answer;
    } catch (error) {
      if (!(error instanceof HttpCallError)) throw error;
      if (term.signal.aborted) throw new EnvdError('aborted', what, 'cut, the Lease term ended');
      if (error.status === undefined) {
        deps.onRequest?.(operation, 'error');
        throw new EnvdError('unavailable', what, error.problem);
      }
      deps.onRequest?.(operation, error.status);
      throw new EnvdError('unavailable', what, `answer HTTP ${error.status} unreadable: ${error.problem}`);
    }
  };
  const connect = (
    operation: EnvdOperation,
    what: string,
    endpoint: RuntimeEndpoint,
    method: string,
    message: unknown,
    term: LeaderTerm,
  ): Promise<HttpAnswer> =>
    call(
      operation,
      what,
      endpoint,
      `/filesystem.Filesystem/${method}`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'connect-protocol-version': '1',
          authorization: `Basic ${Buffer.from(`${deps.user}:`).toString('base64')}`,
        },
        body: Buffer.from(JSON.stringify(message), 'utf8'),
      },
      term,
    );

  return {
    async readFile(endpoint, path, term) {
      const what = `GET ${path}`;
      const { status, body } = await call(
        'get',
        what,
        endpoint,
        filesPath(deps.user, path),
        { method: 'GET', headers: {} },
        term,
      );
      if (status === 404) return { found: false };
      if (status === 200) return { found: true, body };
      throw statusError(what, status);
    },
    async list(endpoint, path, term) {
      const what = `list ${path}`;
      const { status, body } = await connect('list', what, endpoint, 'ListDir', { path, depth: 1 }, term);
      if (status === 404) return [];
      if (status !== 200) throw statusError(what, status);
      return folderEntries(body, path, what);
    },
    async run(endpoint, step, term) {
      if (step.op === 'upload') {
        const what = `upload ${step.files.map((file) => file.path).join(', ')}`;
        const form = multipartForm(
          step.files.map((file) => ({ name: 'file', filename: file.path, content: file.body })),
        );
        const { status } = await call(
          'upload',
          what,
          endpoint,
          filesPath(deps.user),
          { method: 'POST', headers: { 'content-type': form.type }, body: form.body },
          term,
        );
        if (status < 200 || status > 299) throw statusError(what, status);
        return;
      }
      if (step.op === 'remove') {
        const what = `remove ${step.path}`;
        const { status } = await connect('remove', what, endpoint, 'Remove', { path: step.path }, term);
        if (status !== 200) throw statusError(what, status);
        return;
      }
      const what = `move ${step.source} to ${step.destination}`;
      const { status } = await connect(
        'move',
        what,
        endpoint,
        'Move',
        { source: step.source, destination: step.destination },
        term,
      );
      // A missing source means the upload before it was lost (a new, empty volume): plan again.
      if (status === 404) throw new EnvdError('unavailable', what, 'HTTP 404');
      if (status !== 200) throw statusError(what, status);
    },
  };
}

/** `/files` as `user`; an upload names its files' paths in the body instead of `path`. */
function filesPath(user: string, path?: string): string {
  const query = new URLSearchParams({ ...(path === undefined ? {} : { path }), username: user });
  return `/files?${query.toString()}`;
}

/** Each endpoint's URL parsed once: a delivery's requests all go to it. */
const bases = new WeakMap<RuntimeEndpoint, RequestTarget>();

/** `path` (from the root of envd's API) at the endpoint, under the URL's own path when it has one. */
function targetOf(endpoint: RuntimeEndpoint, path: string): RequestTarget {
  let base = bases.get(endpoint);
  if (base === undefined) {
    base = requestTarget(endpoint.url);
    bases.set(endpoint, base);
  }
  return { ...base, path: base.path === '/' ? path : `${base.path}${path}` };
}

function tokenHeader(endpoint: RuntimeEndpoint): Record<string, string> {
  return endpoint.accessToken === undefined ? {} : { 'x-access-token': endpoint.accessToken };
}

/** One entry of a ListDir answer: its base name, and envd's FileType (FILE_TYPE_FILE, ...; '' when absent). */
export interface FolderEntry {
  name: string;
  type: string;
}

/** The entries directly in `folder`; an answer of another shape is envd's fault. */
function folderEntries(body: string, folder: string, what: string): FolderEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new EnvdError('unavailable', what, 'the answer is not JSON');
  }
  const entries = (parsed as { entries?: unknown } | null)?.entries;
  if (entries === undefined) return [];
  if (!Array.isArray(entries)) throw new EnvdError('unavailable', what, 'the answer has no entries list');
  const found: FolderEntry[] = [];
  for (const entry of entries as unknown[]) {
    const { name, path, type } = (entry ?? {}) as { name?: unknown; path?: unknown; type?: unknown };
    if (typeof name !== 'string' || name === '' || name.includes('/')) continue;
    if (typeof path === 'string' && posix.dirname(posix.normalize(path)) !== posix.normalize(folder)) continue;
    found.push({ name, type: typeof type === 'string' ? type : '' });
  }
  return found;
}

function statusError(what: string, status: number): EnvdError {
  if (status === 401 || status === 403) return new EnvdError('unauthorized', what, `HTTP ${status} (token refused)`);
  if (status >= 500 || status === 408 || status === 429) return new EnvdError('unavailable', what, `HTTP ${status}`);
  if (status >= 300 && status < 400)
    return new EnvdError('rejected', what, `HTTP ${status} (redirects are not followed)`);
  return new EnvdError('rejected', what, `HTTP ${status}`);
}
