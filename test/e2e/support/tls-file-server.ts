// An HTTPS server that serves the certificate files a replica wrote, reloading them with the project's
// own reloader (src/server/tls/reloader.ts) when the ..data link is swapped, as `serve` does. It answers
// every AdmissionReview with "allowed", so kube-apiserver can call it through the webhook configuration.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { MIN_TLS_VERSION, loadTlsMaterial, secureContextOptions } from '../../../src/server/tls/material.js';
import { startTlsReloader, type TlsReloader, type TlsReloadResult } from '../../../src/server/tls/reloader.js';
import { systemClock } from '../../../src/time/clock.js';
import { directoryWatcher } from '../../../src/file-watch/directory-watch.js';

export interface TlsFileServer {
  port: number;
  /** Fingerprint (SHA-256) of the certificate new connections get. */
  servingFingerprint(): string;
  reloads: TlsReloadResult[];
  admissionRequests: number;
  close(): Promise<void>;
}

export async function startTlsFileServer(files: { certFile: string; keyFile: string }): Promise<TlsFileServer> {
  const initial = await loadTlsMaterial(files);
  const state = { admissionRequests: 0 };
  const server: Server = createServer(
    { ...secureContextOptions(initial), minVersion: MIN_TLS_VERSION },
    (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.method !== 'POST') {
          response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
          return;
        }
        state.admissionRequests += 1;
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request?: { uid?: string } };
        response.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid: review.request?.uid ?? '', allowed: true },
          }),
        );
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const reloads: TlsReloadResult[] = [];
  const reloader: TlsReloader = startTlsReloader({
    files,
    initial,
    target: server,
    watch: directoryWatcher({
      debounceMs: 50,
      resyncMs: 0,
      clock: systemClock,
      onError: (dir, error) => reloads.push({ kind: 'failed', message: `watch ${dir}: ${error.message}`, attempts: 0 }),
    }),
    clock: systemClock,
    attempts: 5,
    retryDelayMs: 100,
    onResult: (result) => reloads.push(result),
  });
  return {
    port: (server.address() as AddressInfo).port,
    servingFingerprint: () => reloader.current.fingerprint256,
    reloads,
    get admissionRequests() {
      return state.admissionRequests;
    },
    async close() {
      await reloader.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
