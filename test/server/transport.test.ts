/** What only a real TLS socket shows: protocol versions, plain HTTP, huge bodies, client certificates. */
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { httpsRequest, postJson } from './support/https-client.js';
import { clientPki, servingPki, temporaryDirectory, type ClientPki } from './support/pki.js';
import { startTestServer, type TestServer } from './support/server.js';

const basic = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic');
if (basic === undefined) throw new Error('conformance case agent-runtime-basic is missing');

let server: TestServer;
let mtlsServer: TestServer;
let clients: ClientPki;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('transport');
  removeDir = remove;
  const pki = await servingPki(dir);
  clients = await clientPki(dir);
  server = await startTestServer({ tls: pki, caFile: pki.caCertFile });
  server.setConfig(basic.configMap?.data as Record<string, string>);
  mtlsServer = await startTestServer({ tls: { ...pki, clientCaFile: clients.caFile }, caFile: pki.caCertFile });
  mtlsServer.setConfig(basic.configMap?.data as Record<string, string>);
});

afterAll(async () => {
  await server.close();
  await mtlsServer.close();
  await removeDir();
});

/** Sends raw bytes and collects whatever comes back until the peer closes (or 2 s pass). */
function rawExchange(port: number, bytes: string): Promise<{ received: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: '127.0.0.1', port });
    let received = '';
    socket.setTimeout(2000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', (error) => resolve({ received, error: error.message }));
    socket.on('close', () => resolve({ received }));
    socket.write(bytes);
  });
}

describe('the TLS listener', () => {
  it('serves POST /mutate and /healthz over TLS', async () => {
    const health = await httpsRequest(`${server.url}/healthz`, 'GET', undefined, { ca: server.caPem });
    expect(health.status).toBe(200);
    const review = await postJson(`${server.url}/mutate`, reviewFor(basic.pod), { ca: server.caPem });
    expect(review.status).toBe(200);
  });

  it('refuses plain HTTP: no HTTP response ever comes back', async () => {
    const { received } = await rawExchange(server.port, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    // At most a TLS alert record (content type 0x15), never an HTTP status line.
    expect(received).not.toMatch(/HTTP\/1\.[01] /);
    if (received.length > 0) expect(received.charCodeAt(0)).toBe(0x15);
  });

  it('refuses TLS 1.1 and accepts TLS 1.2 and 1.3', async () => {
    const handshake = (version: 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'): Promise<string> =>
      new Promise((resolve) => {
        const socket = tlsConnect({
          host: '127.0.0.1',
          port: server.port,
          servername: 'localhost',
          ca: server.caPem,
          minVersion: version,
          maxVersion: version,
        });
        socket.on('secureConnect', () => {
          resolve(socket.getProtocol() ?? 'unknown');
          socket.end();
        });
        socket.on('error', () => resolve('refused'));
      });
    expect(await handshake('TLSv1.1')).toBe('refused');
    expect(await handshake('TLSv1.2')).toBe('TLSv1.2');
    expect(await handshake('TLSv1.3')).toBe('TLSv1.3');
  });

  it('answers a 20 MB body with 413 and keeps serving', async () => {
    const huge = Buffer.alloc(20 * 1024 * 1024, 'a');
    const body = Buffer.concat([Buffer.from('{"pad":"'), huge, Buffer.from('"}')]);
    const result = await httpsRequest(`${server.url}/mutate`, 'POST', body, { ca: server.caPem });
    expect(result.status).toBe(413);
    expect((result.json() as { message: string }).message).toContain('limit');

    const after = await postJson(`${server.url}/mutate`, reviewFor(basic.pod), { ca: server.caPem });
    expect(after.status).toBe(200);
  });
});

describe('client certificates (--tls-client-ca-file)', () => {
  it('refuses a client without a certificate', async () => {
    await expect(
      httpsRequest(`${mtlsServer.url}/healthz`, 'GET', undefined, { ca: mtlsServer.caPem }),
    ).rejects.toThrow();
  });

  it('refuses a client whose certificate comes from another CA', async () => {
    const options = { ca: mtlsServer.caPem, cert: clients.strangerCertPem, key: clients.strangerKeyPem };
    await expect(httpsRequest(`${mtlsServer.url}/healthz`, 'GET', undefined, options)).rejects.toThrow();
  });

  it('serves a client presenting a certificate from the configured CA', async () => {
    const options = { ca: mtlsServer.caPem, cert: clients.certPem, key: clients.keyPem };
    const review = await postJson(`${mtlsServer.url}/mutate`, reviewFor(basic.pod, 'mtls'), options);
    expect(review.status).toBe(200);
    expect((review.json() as { response: { uid: string } }).response.uid).toBe('mtls');
  });
});
