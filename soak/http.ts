/**
 * One HTTPS exchange with the server under test, reported as an answer or as the error that ended it, never
 * thrown: every phase counts both. Built on node:https so a reset on a reused keep-alive socket shows up
 * exactly as kube-apiserver's client would see it.
 */
import { Agent, request, type RequestOptions } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import { createSecureContext, type SecureContext, type TLSSocket } from 'node:tls';

export interface Target {
  port: number;
  ca: string | Buffer;
}

export interface RequestSpec {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer | string;
  /** Send the body in this many writes without a Content-Length, so it goes out chunked. */
  chunks?: number;
}

export type Outcome =
  | {
      kind: 'answer';
      status: number;
      headers: IncomingHttpHeaders;
      body: Buffer;
      reused: boolean;
      ms: number;
      fingerprint: string;
    }
  /** `handshaken` false: the connection failed before its TLS handshake finished, so no request byte was sent. */
  | { kind: 'error'; error: string; reused: boolean; handshaken: boolean; ms: number };

/** Answers larger than this are cut: the largest legitimate answer is far smaller, and the harness must stay small. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

const contexts = new Map<string, SecureContext>();

/** One TLS context per CA: given `ca` alone, Node builds a new context for every connection, at ~0.1 ms each. */
function contextFor(ca: string | Buffer): SecureContext {
  const key = ca.toString();
  let context = contexts.get(key);
  if (context === undefined) {
    context = createSecureContext({ ca });
    contexts.set(key, context);
  }
  return context;
}

export function keepAliveAgent(target: Target, sockets = 1): Agent {
  return new Agent({
    keepAlive: true,
    maxSockets: sockets,
    secureContext: contextFor(target.ca),
    servername: 'localhost',
  });
}

export function exchange(target: Target, agent: Agent | false, spec: RequestSpec, timeoutMs: number): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    let reused = false;
    let handshaken = false;
    const finish = (outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const fail = (error: unknown): void =>
      finish({ kind: 'error', error: describeError(error), reused, handshaken, ms: performance.now() - started });
    // tls.connect takes secureContext; https's option type leaves it out, so it goes in unchecked here.
    const options: RequestOptions & { secureContext: SecureContext } = {
      host: '127.0.0.1',
      port: target.port,
      method: spec.method,
      path: spec.path,
      headers: spec.headers,
      agent,
      secureContext: contextFor(target.ca),
      servername: 'localhost',
    };
    const req = request(options, (res) => {
      const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
      });
      res.on('error', fail);
      res.on('aborted', () => fail(new Error('answer aborted')));
      res.on('end', () =>
        finish({
          kind: 'answer',
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          reused,
          ms: performance.now() - started,
          fingerprint,
        }),
      );
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('socket', (socket) => {
      reused = req.reusedSocket;
      // A new socket is handed over a tick after it is made, long before its handshake can finish.
      if (reused) handshaken = true;
      else socket.once('secureConnect', () => (handshaken = true));
    });
    req.on('error', fail);
    if (spec.body === undefined) {
      req.end();
    } else if (spec.chunks === undefined || spec.chunks <= 1) {
      req.end(spec.body);
    } else {
      void writeChunked(req, Buffer.from(spec.body), spec.chunks);
    }
  });
}

/** Separate writes become separate chunks on the wire; a turn of the event loop between them keeps them apart. */
async function writeChunked(req: ReturnType<typeof request>, body: Buffer, chunks: number): Promise<void> {
  const size = Math.ceil(body.length / chunks);
  for (let offset = 0; offset < body.length; offset += size) {
    if (req.destroyed) return;
    req.write(body.subarray(offset, offset + size));
    await new Promise((resolve) => setImmediate(resolve));
  }
  req.end();
}

export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === undefined) return error.message;
  // Node reports a socket closed before any answer as ECONNRESET too; keep the two apart.
  return error.message === 'socket hang up' ? `${code} (socket hang up)` : code;
}
