/**
 * One request to an agent-runtime, on node:http, or node:https for an `https:` URL (with the https.Agent
 * runtime-tls.ts makes, which verifies the runtime): redirects are never followed, the whole exchange, TLS
 * handshake included, is bounded by a timeout and the answer's body by a size, an abort (the leader's term
 * ended) cuts it at once, and a failure says only what kind it was (a code such as ECONNREFUSED or
 * UNABLE_TO_VERIFY_LEAF_SIGNATURE, "timed out", "answer too large", "aborted"), never what the server sent.
 *
 * node:http and not fetch: a burst of claims makes the controller CPU-bound, and a plain request with a body made
 * here (multipartForm) costs it far less CPU than an upload through fetch's WHATWG streams, FormData and Blob;
 * the figure is the envd client's CPU per first delivery (`npm run bench:deliver-client`, docs/benchmark.md).
 * The agent keeps each runtime's connection alive for the few requests of one delivery and closes it soon after,
 * so a cluster of many sandboxes does not keep a socket per pod.
 */
import { Agent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';
import { systemClock, type Clock } from '../../time/clock.js';
import { randomHex } from './random-hex.js';

export interface HttpAnswer {
  status: number;
  body: string;
}

/** Why no answer came: the text is fit for a log line (no body, no header of the server's). */
export class HttpCallError extends Error {
  override readonly name = 'HttpCallError';
  constructor(
    readonly problem: string,
    /** Set when the status line came but the body could not be read. */
    readonly status?: number,
  ) {
    super(problem);
  }
}

/**
 * Where a request goes, parsed from its URL once (requestTarget) and handed to node as options, so that no
 * request parses a URL again: a saving in the envd client's CPU per first delivery
 * (`npm run bench:deliver-client`).
 */
export interface RequestTarget {
  protocol: string;
  /** An IPv6 address without its brackets, as node connects to it. */
  hostname: string;
  port: number;
  /** The Host header: the URL's host, its port left out when it is the protocol's own. */
  host: string;
  /** The path, query included. */
  path: string;
}

export function requestTarget(url: string): RequestTarget {
  const parsed = new URL(url);
  const hostname = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port);
  return { protocol: parsed.protocol, hostname, port, host: parsed.host, path: `${parsed.pathname}${parsed.search}` };
}

export interface HttpCallLimits {
  timeoutMs: number;
  maxBodyBytes: number;
}

/** Idle runtime connections are closed after this long: long enough for one delivery's requests. */
const IDLE_MS = 2000;

/** How every runtime agent, plain or TLS, keeps its connections. */
export const RUNTIME_KEEP_ALIVE = { keepAlive: true, maxFreeSockets: 1, timeout: IDLE_MS } as const;

export function runtimeAgent(): Agent {
  return new Agent({ ...RUNTIME_KEEP_ALIVE });
}

/**
 * `agent` must be an https.Agent for an `https:` URL and a plain one for `http:`: node refuses the mix
 * (ERR_INVALID_PROTOCOL) before connecting, so an https URL is never sent in clear.
 */
export function httpCall(
  agent: Agent | HttpsAgent,
  target: RequestTarget,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: Buffer; signal?: AbortSignal },
  limits: HttpCallLimits,
  clock: Clock = systemClock,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    let status: number | undefined;
    let settled = false;
    let req: ClientRequest | undefined;
    const fail = (problem: string): void => {
      if (settled) return;
      settled = true;
      cancelTimeout();
      init.signal?.removeEventListener('abort', onAbort);
      req?.destroy();
      reject(new HttpCallError(problem, status));
    };
    const onAbort = (): void => fail('aborted');
    const onResponse = (res: IncomingMessage): void => {
      status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        // Past the bound the rest is not read: the connection is dropped.
        if (size > limits.maxBodyBytes) fail('answer too large');
        else chunks.push(chunk);
      });
      // A connection cut mid-answer ends the response with an error (ECONNRESET), not with 'end'.
      res.on('error', (error) => fail(codeOf(error)));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        cancelTimeout();
        init.signal?.removeEventListener('abort', onAbort);
        resolve({ status: status ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    };
    const headers = headerList(target.host, init.headers, init.body);
    const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const cancelTimeout = clock.setTimer(() => fail('timed out'), limits.timeoutMs);
    try {
      // The protocol is given, so node still refuses an agent of the other one.
      const { protocol, hostname, port, path } = target;
      req = request({ protocol, hostname, port, path, method: init.method, headers, agent }, onResponse);
    } catch (error) {
      // node refuses an agent of the other protocol (or a protocol of neither) before it connects.
      fail(codeOf(error));
      return;
    }
    req.on('error', (error) => fail(codeOf(error)));
    if (init.signal?.aborted === true) return fail('aborted');
    init.signal?.addEventListener('abort', onAbort, { once: true });
    req.end(init.body);
  });
}

/**
 * The request's headers as one flat list of names and values, Host and Content-Length included. Given a list,
 * node writes the headers as they are (still checking each name and value) rather than setting them one by one,
 * a saving in the envd client's CPU per first delivery (`npm run bench:deliver-client`); so it sets no Host of
 * its own, and this one is what it would send.
 */
function headerList(host: string, headers: Record<string, string>, body: Buffer | undefined): string[] {
  const list = ['host', host];
  for (const [name, value] of Object.entries(headers)) list.push(name, value);
  if (body !== undefined) list.push('content-length', String(body.length));
  return list;
}

/** One part of a multipart/form-data body: a file, under the form field `name`. */
export interface FormFile {
  name: string;
  filename: string;
  content: string;
}

/**
 * A multipart/form-data body of file parts, as envd's upload reads it. Its boundary is random, and drawn again
 * in the rare case that some content holds it.
 */
export function multipartForm(files: readonly FormFile[]): { type: string; body: Buffer } {
  const data = files.map((file) => Buffer.from(file.content, 'utf8'));
  let boundary: string;
  do boundary = `si-${randomHex(16)}`;
  while (data.some((bytes) => bytes.includes(boundary)));
  const chunks: Buffer[] = [];
  for (const [i, file] of files.entries()) {
    const head =
      `--${boundary}\r\n` +
      `Content-Disposition: form-data; name="${quoted(file.name)}"; filename="${quoted(file.filename)}"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`;
    chunks.push(Buffer.from(head, 'utf8'), data[i] as Buffer, Buffer.from('\r\n', 'utf8'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`, 'utf8'));
  return { type: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(chunks) };
}

/** A name inside a quoted header parameter, escaped as browsers escape a form's file names. */
function quoted(text: string): string {
  return text.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/**
 * Only an error's code: its message can quote what the server sent. TLS failures have codes too, node's or
 * OpenSSL's (ERR_TLS_CERT_ALTNAME_INVALID, ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED), hence digits and 64.
 */
function codeOf(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code : 'connection failed';
}
