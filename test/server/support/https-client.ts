/** A small HTTPS client over node:https, so tests see exactly what went over the wire. */
import { request, type Agent } from 'node:https';
import type { TLSSocket } from 'node:tls';

export interface TlsClientOptions {
  ca: Buffer | string | (Buffer | string)[];
  cert?: string;
  key?: string;
  /** Default: a fresh connection per request. */
  agent?: Agent;
  servername?: string;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): unknown;
  /** SHA-256 fingerprint of the certificate the server presented on this connection. */
  peerFingerprint: string;
}

export function httpsRequest(
  url: string,
  method: string,
  body: string | Buffer | undefined,
  options: TlsClientOptions,
  headers: Record<string, string> = {},
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: options.ca,
        cert: options.cert,
        key: options.key,
        agent: options.agent ?? false,
        servername: options.servername ?? 'localhost',
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const peerFingerprint = socket.getPeerCertificate().fingerprint256;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: () => JSON.parse(text) as unknown,
            peerFingerprint,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export function postJson(url: string, payload: unknown, options: TlsClientOptions): Promise<HttpResult> {
  return httpsRequest(url, 'POST', JSON.stringify(payload), options);
}
