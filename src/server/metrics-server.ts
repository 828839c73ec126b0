/**
 * The plain-HTTP side listener: `/metrics` for Prometheus, and `/healthz` and `/readyz` again for kubelet
 * probes, which cannot present a client certificate when the webhook port requires one. It carries no
 * admission data, so it needs no TLS; keep it off the Service the API server talks to.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { ALIVE, readiness } from './health.js';

export interface MetricsServerDeps {
  registry: Registry;
  ready(): boolean;
  onError(error: unknown): void;
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startMetricsServer(deps: MetricsServerDeps, host: string, port: number): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    handle(deps, request, response).catch((error: unknown) => {
      deps.onError(error);
      if (!response.headersSent) send(response, 500, 'text/plain', 'metrics collection failed\n');
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => closeServer(server),
  };
}

async function handle(deps: MetricsServerDeps, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = (request.url ?? '/').split('?', 1)[0];
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    send(response, 405, 'text/plain', 'method not allowed\n');
    return;
  }
  if (path === '/metrics') {
    send(response, 200, deps.registry.contentType, await deps.registry.metrics());
  } else if (path === '/healthz' || path === '/readyz') {
    const { code, body } = path === '/healthz' ? ALIVE : readiness(deps.ready());
    send(response, code, 'application/json; charset=utf-8', JSON.stringify(body));
  } else {
    send(response, 404, 'text/plain', 'not found\n');
  }
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  response.end(response.req.method === 'HEAD' ? undefined : body);
}

/** Scrapes are repeatable, so open connections are cut rather than waited for. */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error === undefined ? resolve() : reject(error)));
    server.closeAllConnections();
  });
}
