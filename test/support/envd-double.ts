/**
 * A loopback stand-in for E2B's envd, for tests and the delivery benchmark. It is NOT the real envd: it
 * follows envd's published spec (e2b-dev/infra packages/envd/spec/envd.yaml and spec/filesystem/filesystem.proto)
 * for the three calls delivery makes, to the letter where delivery depends on it:
 *
 * - `GET /files?path=&username=`: 200 with the file's bytes (application/octet-stream), 404 with a JSON Error
 *   for a file that does not exist;
 * - `POST /files?path=&username=`: multipart/form-data whose parts named `file` are written in order, each to
 *   `path`, or without `path` to the path its file name gives (envd's FileNameWithPath, since envd 0.1.2); a
 *   second part for a path already written in the request is a 400, as envd's, after the first was written;
 *   parts of other names are skipped, and a body with no `file` part writes nothing and answers 200 `[]`.
 *   Parent folders are made; an existing file is truncated and written in place (as envd opens it O_TRUNC),
 *   which this double does in two halves with a pause between them so that a reader racing it can see half a
 *   file; 200 with `[{"path","name","type":"file"}]` for each file. Opened in place like envd's (os.OpenFile
 *   O_WRONLY|O_CREATE|O_TRUNC in packages/envd/internal/api/upload.go), a FIFO at `path` is written into, not
 *   replaced, and the open waits for a reader as envd's does: the wrapper's wake (docs/env-file.md);
 * - `POST /filesystem.Filesystem/Move`: Connect protocol, unary, JSON: `{"source","destination"}`; a rename;
 *   200 with `{"entry":{...}}`, or a Connect error `{"code","message"}` with the HTTP status Connect maps it to
 *   (not_found 404, unauthenticated 401, invalid_argument 400);
 * - `POST /filesystem.Filesystem/ListDir` `{"path","depth"}`: 200 `{"entries":[{"name","type","path"}]}` one
 *   level deep (depth 0 means 1, as envd reads it), not_found for a missing folder;
 * - `POST /filesystem.Filesystem/Remove` `{"path"}`: a remove-all, as envd's os.RemoveAll: a missing path is no
 *   error, and a symlink is removed itself, never what it points to; 200 `{}`;
 * - every call checks `X-Access-Token` against the token it was given: 401 when it differs or is missing;
 *   a `username` (or the Basic user of Move) that is not a known user gets 401, as envd's user lookup does.
 *
 * Pod paths under `podDir` (/var/sandbox) map into `root`, a temp dir that stands for the pod's volume. A write
 * anywhere else is refused (400) and recorded in `outside`, so a test can assert that none happened.
 *
 * With `tls` it serves HTTPS only, as a runtime advertising `agents.kruise.io/runtime-tls-port` does, and with
 * `requestClientCert` it requires a client certificate signed by `tls.ca` (a runtime started with a client CA).
 * A connection that does not complete the handshake (no or a stranger's client certificate, plain HTTP) never
 * becomes a request: it is counted in `handshakeFailures` and nothing else.
 *
 * Its file operations are synchronous, but for the paused in-place write: each takes microseconds on a local
 * folder, and the delivery benchmark runs hundreds of doubles in its own process, on the cores the controller
 * uses, where each fs/promises call's round trip through libuv's threads cost more CPU than the call itself
 * (docs/benchmark.md, "Method").
 */
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { dirname, join, posix } from 'node:path';
import { readMultipart } from './multipart-reader.js';
import { waitUntil } from './wait-until.js';

/**
 * How the double answers one request. `{ listing }` answers a ListDir with these entries, whatever the folder
 * holds (a hostile envd naming paths it wants written), and any other call as the spec says.
 */
export type EnvdBehaviour =
  | 'normal'
  | { status: number }
  | { listing: readonly { name: string; type?: string }[] }
  | 'slow'
  | 'truncated'
  | 'redirect'
  | 'huge'
  | 'hang-up';

export interface EnvdRequestRecord {
  operation: 'get' | 'upload' | 'move' | 'list' | 'remove' | 'other';
  path: string | undefined;
  /** Every pod path the request named, whatever the answer: a Move's source and destination both. */
  paths: string[];
  status: number;
  /** Date.now() when the answer was sent. */
  at: number;
  /** Over TLS with a client certificate: its subject's common name. */
  clientCommonName?: string;
}

export interface EnvdDoubleTls {
  key: string;
  cert: string;
  /** The CA client certificates must be signed by; required with `requestClientCert`. */
  ca?: string;
  requestClientCert: boolean;
}

export interface EnvdDoubleOptions {
  root: string;
  /** The loopback address it listens on (any of 127.0.0.0/8 stands for a pod IP); 127.0.0.1 by default. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  podDir?: string;
  /** undefined: any token, or none, is accepted (envd started without an access token). */
  token?: string;
  users?: readonly string[];
  /** Chosen per request: how the double misbehaves (fuzz), 'normal' for the spec's behaviour. */
  behaviour?: (request: IncomingMessage) => EnvdBehaviour;
  /** Pause between the two halves of an in-place write. */
  halfWriteMs?: number;
  /** How long a 'slow' answer takes; longer than the client's timeout. */
  slowMs?: number;
  /** Serve HTTPS instead of HTTP. */
  tls?: EnvdDoubleTls;
}

export interface EnvdDouble {
  url: string;
  port: number;
  requests: EnvdRequestRecord[];
  /** Pod paths written or moved to that are not under podDir. */
  outside: string[];
  /** With `tls`: connections whose handshake failed, so no request was read from them. */
  readonly handshakeFailures: number;
  setToken(token: string | undefined): void;
  /** Another folder for the volume from now on: a new pod. Requests still running finish in the old one. */
  setRoot(root: string): void;
  setBehaviour(behaviour: ((request: IncomingMessage) => EnvdBehaviour) | undefined): void;
  close(): Promise<void>;
}

const MAX_UPLOAD_BYTES = 8 * 1024 * 1024;

export async function startEnvdDouble(options: EnvdDoubleOptions): Promise<EnvdDouble> {
  const podDir = options.podDir ?? '/var/sandbox';
  const users = new Set(options.users ?? ['root', 'user']);
  let token = options.token;
  let root = options.root;
  let behaviour = options.behaviour;
  const requests: EnvdRequestRecord[] = [];
  const outside: string[] = [];

  const localPath = (podPath: string | null): string | undefined => {
    if (podPath === null || !podPath.startsWith('/')) return undefined;
    const normal = posix.normalize(podPath);
    if (normal !== podDir && !normal.startsWith(`${podDir}/`)) return undefined;
    return join(root, normal.slice(podDir.length));
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<EnvdRequestRecord> => {
    const url = new URL(request.url ?? '/', 'http://envd');
    const body = await readBody(request);
    const isMove = url.pathname === '/filesystem.Filesystem/Move';
    const isList = url.pathname === '/filesystem.Filesystem/ListDir';
    const isRemove = url.pathname === '/filesystem.Filesystem/Remove';
    const isConnect = isMove || isList || isRemove;
    const isFiles = url.pathname === '/files';
    const operation: EnvdRequestRecord['operation'] = isMove
      ? 'move'
      : isList
        ? 'list'
        : isRemove
          ? 'remove'
          : isFiles
            ? request.method === 'GET'
              ? 'get'
              : 'upload'
            : 'other';
    const clientCommonName = peerCommonName(request);
    const pathParam = url.searchParams.get('path');
    // An upload's parts, and the path each is written to.
    const parts = operation === 'upload' ? readMultipart(request.headers['content-type'], body) : undefined;
    const targets = (parts ?? [])
      .filter((part) => part.name === 'file')
      .map((part) => ({ path: pathParam ?? part.filename, content: part.content }));
    const named = isConnect
      ? connectPaths(body)
      : operation === 'upload'
        ? [...new Set([pathParam, ...targets.map((target) => target.path)])].filter((p) => p != null)
        : [pathParam].filter((p) => p !== null);
    const record = (status: number, path?: string): EnvdRequestRecord => ({
      operation,
      path: path ?? (isConnect ? (pathParam ?? connectPath(body)) : named.join(' ') || undefined),
      paths: named,
      status,
      at: Date.now(),
      ...(clientCommonName === undefined ? {} : { clientCommonName }),
    });

    const chosen = behaviour?.(request) ?? 'normal';
    if (typeof chosen === 'object' && 'listing' in chosen) {
      if (isList) {
        sendJson(response, 200, { entries: chosen.listing });
        return record(200);
      }
    } else if (chosen !== 'normal') {
      return misbehave(chosen, response, record, options.slowMs ?? 3000);
    }

    if (token !== undefined && request.headers['x-access-token'] !== token) {
      if (isConnect) return connectError(response, 401, 'unauthenticated', 'invalid access token', record);
      return jsonError(response, 401, 'invalid access token', record);
    }
    if (isFiles && (request.method === 'GET' || request.method === 'POST')) {
      const user = url.searchParams.get('username') ?? 'root';
      if (!users.has(user)) return jsonError(response, 401, `error looking up user '${user}'`, record);
      if (request.method === 'GET') {
        const local = localPath(pathParam);
        if (local === undefined)
          return jsonError(response, 400, 'path outside the volume this double stands for', record);
        try {
          const content = readFileSync(local);
          response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': content.length });
          response.end(content);
          return record(200);
        } catch {
          return jsonError(response, 404, 'file not found', record);
        }
      }
      // As envd: a body that is neither multipart nor raw is refused; a multipart one it cannot read is a 500.
      if (!String(request.headers['content-type'] ?? '').startsWith('multipart/'))
        return jsonError(response, 400, 'unsupported content type', record);
      if (parts === undefined) return jsonError(response, 500, 'error parsing multipart form', record);
      const written: { path: string; name: string; type: 'file' }[] = [];
      for (const target of targets) {
        if (target.path === undefined)
          return jsonError(response, 400, 'filename not found in Content-Disposition header', record);
        const podPath = target.path;
        if (written.some((entry) => entry.path === podPath))
          return jsonError(response, 400, `you cannot upload multiple files to the same path '${podPath}'`, record);
        const local = localPath(podPath);
        if (local === undefined) {
          outside.push(podPath);
          return jsonError(response, 400, 'path outside the volume this double stands for', record);
        }
        if (isFifo(local)) await writeFifo(local, target.content, () => response.destroyed || request.socket.destroyed);
        else await writeInPlace(local, target.content, options.halfWriteMs ?? 5);
        written.push({ path: podPath, name: posix.basename(podPath), type: 'file' });
      }
      sendJson(response, 200, written);
      return record(200);
    }
    if (isConnect && request.method === 'POST') {
      if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) {
        return connectError(response, 415, 'invalid_argument', 'expected application/json', record);
      }
      const user = basicUser(request.headers.authorization);
      if (user === undefined || !users.has(user))
        return connectError(response, 401, 'unauthenticated', 'unknown user', record);
      let move: { source?: unknown; destination?: unknown; path?: unknown };
      try {
        move = JSON.parse(body.toString('utf8')) as typeof move;
      } catch {
        return connectError(response, 400, 'invalid_argument', 'body is not JSON', record);
      }
      if (isList || isRemove) {
        const podPath = typeof move.path === 'string' ? move.path : null;
        const local = localPath(podPath);
        if (local === undefined) {
          if (isRemove && podPath !== null) outside.push(podPath);
          return connectError(
            response,
            400,
            'invalid_argument',
            'path outside the volume',
            record,
            podPath ?? undefined,
          );
        }
        if (isRemove) {
          rmSync(local, { recursive: true, force: true });
          sendJson(response, 200, {});
          return record(200, podPath ?? undefined);
        }
        let names: string[];
        try {
          names = readdirSync(local);
        } catch {
          return connectError(response, 404, 'not_found', 'directory not found', record, podPath ?? undefined);
        }
        const entries = names.map((name) => {
          const info = lstatSync(join(local, name));
          // As envd's JSON: a FIFO (or socket, device) is FILE_TYPE_UNSPECIFIED, the default, left out.
          const type = info.isSymbolicLink()
            ? 'FILE_TYPE_SYMLINK'
            : info.isDirectory()
              ? 'FILE_TYPE_DIRECTORY'
              : info.isFile()
                ? 'FILE_TYPE_FILE'
                : undefined;
          return { name, ...(type === undefined ? {} : { type }), path: posix.join(podPath ?? '', name) };
        });
        sendJson(response, 200, { entries });
        return record(200, podPath ?? undefined);
      }
      const source = typeof move.source === 'string' ? move.source : null;
      const destination = typeof move.destination === 'string' ? move.destination : null;
      const from = localPath(source);
      const to = localPath(destination);
      if (to === undefined && destination !== null) outside.push(destination);
      if (from === undefined || to === undefined)
        return connectError(
          response,
          400,
          'invalid_argument',
          'path outside the volume',
          record,
          destination ?? undefined,
        );
      try {
        mkdirSync(dirname(to), { recursive: true });
        renameSync(from, to);
      } catch {
        return connectError(response, 404, 'not_found', 'source not found', record, destination ?? undefined);
      }
      sendJson(response, 200, {
        entry: { name: posix.basename(destination ?? ''), type: 'FILE_TYPE_FILE', path: destination },
      });
      return record(200, destination ?? undefined);
    }
    return jsonError(response, 404, 'not found', record);
  };

  const onRequest = (request: IncomingMessage, response: ServerResponse): void => {
    handle(request, response)
      .then((entry) => requests.push(entry))
      .catch(() => {
        if (!response.headersSent)
          jsonError(response, 500, 'double failed', () => ({
            operation: 'other',
            path: undefined,
            paths: [],
            status: 500,
            at: Date.now(),
          }));
        else response.destroy();
      });
  };
  let handshakeFailures = 0;
  const server: Server | HttpsServer =
    options.tls === undefined ? createServer(onRequest) : httpsServer(options.tls, onRequest);
  server.on('tlsClientError', () => (handshakeFailures += 1));
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: options.port ?? 0 }, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${options.tls === undefined ? 'http' : 'https'}://${host}:${port}`,
    port,
    requests,
    outside,
    get handshakeFailures() {
      return handshakeFailures;
    },
    setToken: (value) => {
      token = value;
    },
    setRoot: (value) => {
      root = value;
    },
    setBehaviour: (value) => {
      behaviour = value;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function httpsServer(tls: EnvdDoubleTls, onRequest: (req: IncomingMessage, res: ServerResponse) => void): HttpsServer {
  if (tls.requestClientCert && tls.ca === undefined) throw new Error('requestClientCert needs the client CA');
  return createHttpsServer(
    {
      key: tls.key,
      cert: tls.cert,
      ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      requestCert: tls.requestClientCert,
      rejectUnauthorized: tls.requestClientCert,
    },
    onRequest,
  );
}

function peerCommonName(request: IncomingMessage): string | undefined {
  const socket = request.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return undefined;
  const subject = socket.getPeerCertificate().subject as Record<string, unknown> | undefined;
  const name = subject?.CN;
  return typeof name === 'string' ? name : undefined;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_UPLOAD_BYTES) throw new Error('upload too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * As envd's open of a FIFO: it waits until a reader has the FIFO open, then writes. A blocking open here would
 * stop the whole process for as long as no reader comes (a wrapper that already started its app), and every
 * double in the process shares it; so the open is tried without blocking until a reader is there, or the client
 * has gone (envd's own open would go on waiting, which the client cannot tell apart), or a minute has passed:
 * longer than any client in the tests waits for an upload.
 */
async function writeFifo(path: string, content: Buffer, gone: () => boolean): Promise<void> {
  const opened = (): number | undefined => {
    try {
      return openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENXIO') return undefined;
      throw error;
    }
  };
  const fd = await waitUntil(opened, {
    what: `a reader of the FIFO ${path}`,
    timeoutMs: 60_000,
    intervalMs: 5,
    until: (fd): fd is number => fd !== undefined,
    giveUp: () => (gone() ? new Error(`the client went away before a reader opened the FIFO ${path}`) : undefined),
  });
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
}

/** As envd: open with O_TRUNC and write into the same inode; here in two halves, visible to a racing reader. */
async function writeInPlace(path: string, content: Buffer, pauseMs: number): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  if (pauseMs <= 0) {
    const fd = openSync(path, 'w', 0o644);
    try {
      writeSync(fd, content);
    } finally {
      closeSync(fd);
    }
    return;
  }
  const handle = await open(path, 'w', 0o644);
  try {
    const half = Math.floor(content.length / 2);
    await handle.write(content.subarray(0, half));
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    await handle.write(content.subarray(half));
  } finally {
    await handle.close();
  }
}

function isFifo(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isFIFO() ?? false;
  } catch {
    return false;
  }
}

function basicUser(header: string | undefined): string | undefined {
  if (header === undefined || !header.startsWith('Basic ')) return undefined;
  const decoded = Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? decoded : decoded.slice(0, colon);
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

function jsonError(
  response: ServerResponse,
  status: number,
  message: string,
  record: (status: number) => EnvdRequestRecord,
): EnvdRequestRecord {
  sendJson(response, status, { code: status, message });
  return record(status);
}

function connectError(
  response: ServerResponse,
  status: number,
  code: string,
  message: string,
  record: (status: number, path?: string) => EnvdRequestRecord,
  path?: string,
): EnvdRequestRecord {
  sendJson(response, status, { code, message });
  return record(status, path);
}

async function misbehave(
  chosen: Exclude<EnvdBehaviour, 'normal' | { listing: unknown }>,
  response: ServerResponse,
  record: (status: number) => EnvdRequestRecord,
  slowMs: number,
): Promise<EnvdRequestRecord> {
  if (typeof chosen === 'object') return jsonError(response, chosen.status, 'injected failure', record);
  switch (chosen) {
    case 'slow':
      // Longer than the client's timeout; the response is abandoned when the client gives up.
      await new Promise((resolve) => setTimeout(resolve, slowMs));
      if (!response.destroyed) jsonError(response, 500, 'too late', record);
      return record(0);
    case 'truncated':
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 1000 });
      response.write('sha256:');
      response.destroy();
      return record(200);
    case 'redirect':
      response.writeHead(307, { location: 'http://127.0.0.2:9/elsewhere' });
      response.end();
      return record(307);
    case 'huge': {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      for (let i = 0; i < 64 && !response.destroyed; i += 1) {
        if (!response.write(chunk)) await drainedOrClosed(response);
      }
      response.end();
      return record(200);
    }
    case 'hang-up':
      response.socket?.destroy();
      return record(0);
  }
}

function drainedOrClosed(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.on('drain', done);
    response.on('close', done);
  });
}

/** The path a Connect request names (`path`, or a Move's `destination`), for the record of any answer. */
function connectPath(body: Buffer): string | undefined {
  const parsed = connectBody(body);
  const path = parsed?.path ?? parsed?.destination;
  return typeof path === 'string' ? path : undefined;
}

/** Every path a Connect request names: `path`, or a Move's `source` and `destination`. */
function connectPaths(body: Buffer): string[] {
  const parsed = connectBody(body);
  return [parsed?.path, parsed?.source, parsed?.destination].filter((p): p is string => typeof p === 'string');
}

function connectBody(body: Buffer): { path?: unknown; source?: unknown; destination?: unknown } | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? parsed : undefined;
  } catch {
    return undefined;
  }
}
