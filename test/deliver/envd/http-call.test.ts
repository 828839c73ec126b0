import { createServer, type Server, type ServerResponse, type IncomingMessage } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  httpCall,
  HttpCallError,
  multipartForm,
  requestTarget,
  runtimeAgent,
} from '../../../src/deliver/envd/http-call.js';
import { readMultipart } from '../../support/multipart-reader.js';
import { runtimeTlsAgent, tlsBundleFromSecretData } from '../../../src/deliver/envd/runtime-tls.js';
import { RUNTIME_TLS_SERVER_NAME } from '../../../src/sandbox/api.js';
import { createCa } from '../../server/support/pki.js';
import { propertyRuns } from '../../support/property-runs.js';
import {
  runtimeServerCert,
  runtimeTlsPki,
  runtimeTlsSecretData,
  type CertAndKey,
  type RuntimeTlsPki,
} from '../../support/runtime-tls-pki.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let base: string;
let handler: Handler = (_req, res) => res.end('ok');
let connections = 0;

beforeAll(async () => {
  server = createServer((req, res) => handler(req, res));
  server.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const limits = { timeoutMs: 2000, maxBodyBytes: 1024 };

async function failure(promise: Promise<unknown>): Promise<HttpCallError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpCallError);
  return error as HttpCallError;
}

describe('multipartForm', () => {
  const files = fc.array(
    fc.record({
      filename: fc.oneof(fc.constantFrom('env.sh', '/var/sandbox/.env.sh.0123456789abcdef.tmp'), fc.string()),
      content: fc.oneof(fc.string({ unit: 'grapheme' }), fc.constantFrom('--', '\r\n--x--\r\n', 'a\r\n\r\nb', '')),
    }),
    { minLength: 1, maxLength: 3 },
  );

  it('is read back whole, every part in order, by an independent multipart parser, for any content', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Names that need no escaping, as a WHATWG parser (undici's) reads them: it also decodes a literal %22,
        // %0D or %0A in a name, in either case (the browsers' escapes), which Go's mime/multipart, envd's reader,
        // leaves as it is, as the double's reader does (the test below).
        files.filter((all) => all.every((file) => !/["\r\n]|%(?:22|0d|0a)/i.test(file.filename))),
        async (all) => {
          const form = multipartForm(all.map((file) => ({ name: 'file', ...file })));
          const parsed = await new Response(form.body, { headers: { 'content-type': form.type } }).formData();
          const got = parsed.getAll('file') as File[];
          expect(got.map((file) => file.name)).toEqual(all.map((file) => file.filename));
          expect(await Promise.all(got.map((file) => file.text()))).toEqual(all.map((file) => file.content));
        },
      ),
      { numRuns: propertyRuns(300) },
    );
  });

  it("is read back the same by the envd double's reader, file names whole, slashes and all", () => {
    fc.assert(
      fc.property(
        files.filter((all) => all.every((file) => !/["\\\r\n]/.test(file.filename))),
        (all) => {
          const form = multipartForm(all.map((file) => ({ name: 'file', ...file })));
          const parts = readMultipart(form.type, form.body);
          expect(parts?.map((part) => [part.name, part.filename, part.content.toString('utf8')])).toEqual(
            all.map((file) => ['file', file.filename, file.content]),
          );
        },
      ),
      { numRuns: propertyRuns(300) },
    );
  });

  it('escapes a quote or a line break in a file name instead of ending the header', async () => {
    const form = multipartForm([{ name: 'file', filename: 'a"b\r\nc', content: 'x' }]);
    const parsed = await new Response(form.body, { headers: { 'content-type': form.type } }).formData();
    expect([...parsed.keys()]).toEqual(['file']);
    expect(form.body.toString('latin1')).toContain('filename="a%22b%0D%0Ac"');
    expect(readMultipart(form.type, form.body)?.map((part) => part.filename)).toEqual(['a%22b%0D%0Ac']);
  });
});

describe('requestTarget', () => {
  it('is what node would have read from the URL: the address to connect to, the Host header, the path', () => {
    expect(requestTarget('http://10.0.0.5:49983/files?path=%2Fx&username=root')).toEqual({
      protocol: 'http:',
      hostname: '10.0.0.5',
      port: 49983,
      host: '10.0.0.5:49983',
      path: '/files?path=%2Fx&username=root',
    });
    expect(requestTarget('http://[fd00::5]:49983/envd')).toEqual({
      protocol: 'http:',
      hostname: 'fd00::5',
      port: 49983,
      host: '[fd00::5]:49983',
      path: '/envd',
    });
    expect(requestTarget('https://10.0.0.5:443/')).toMatchObject({ port: 443, host: '10.0.0.5', path: '/' });
    expect(requestTarget('http://10.0.0.5/')).toMatchObject({ port: 80, host: '10.0.0.5' });
  });
});

describe('httpCall', () => {
  it('answers with the status and the body, and sends the body with its length', async () => {
    handler = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.statusCode = 201;
        res.end(`${req.method} ${req.headers['content-length']} ${Buffer.concat(chunks).toString()}`);
      });
    };
    const answer = await httpCall(
      runtimeAgent(),
      requestTarget(`${base}/x`),
      { method: 'POST', headers: {}, body: Buffer.from('héllo') },
      limits,
    );
    expect(answer).toEqual({ status: 201, body: 'POST 6 héllo' });
  });

  it('sends the Host header node would send, once, and the headers it was given', async () => {
    let seen: string[] = [];
    handler = (req, res) => {
      seen = req.rawHeaders;
      res.end('ok');
    };
    await httpCall(
      runtimeAgent(),
      requestTarget(`${base}/x`),
      { method: 'GET', headers: { 'x-access-token': 't' } },
      limits,
    );
    const names = seen.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase());
    expect(names.filter((name) => name === 'host')).toHaveLength(1);
    expect(seen[seen.findIndex((name) => name.toLowerCase() === 'host') + 1]).toBe(new URL(base).host);
    expect(seen[seen.indexOf('x-access-token') + 1]).toBe('t');
  });

  it('refuses a header value that would split the request, sending nothing', async () => {
    let requests = 0;
    handler = (_req, res) => {
      requests += 1;
      res.end('ok');
    };
    const error = await failure(
      httpCall(
        runtimeAgent(),
        requestTarget(`${base}/x`),
        { method: 'GET', headers: { 'x-a': 'v\r\nx-b: w' } },
        limits,
      ),
    );
    expect(error.problem).toBe('ERR_INVALID_CHAR');
    expect(requests).toBe(0);
  });

  it('keeps one connection for the requests of one delivery', async () => {
    handler = (_req, res) => res.end('ok');
    const agent = runtimeAgent();
    const before = connections;
    for (let i = 0; i < 3; i += 1)
      await httpCall(agent, requestTarget(`${base}/x`), { method: 'GET', headers: {} }, limits);
    expect(connections - before).toBe(1);
  });

  it('does not follow a redirect', async () => {
    handler = (_req, res) => {
      res.writeHead(302, { location: 'http://192.0.2.1/' });
      res.end();
    };
    expect(
      (await httpCall(runtimeAgent(), requestTarget(`${base}/x`), { method: 'GET', headers: {} }, limits)).status,
    ).toBe(302);
  });

  it('stops reading past the size bound, keeping the status', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('x'.repeat(4096));
      setTimeout(() => res.end('y'.repeat(4096)), 50);
    };
    const error = await failure(
      httpCall(runtimeAgent(), requestTarget(`${base}/x`), { method: 'GET', headers: {} }, limits),
    );
    expect(error.problem).toBe('answer too large');
    expect(error.status).toBe(200);
  });

  it('gives up at the timeout on a server that never answers', async () => {
    handler = () => undefined;
    const error = await failure(
      httpCall(
        runtimeAgent(),
        requestTarget(`${base}/x`),
        { method: 'GET', headers: {} },
        { ...limits, timeoutMs: 100 },
      ),
    );
    expect(error.problem).toBe('timed out');
    expect(error.status).toBeUndefined();
  });

  it('names a cut answer by its code, never by what the server sent', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('SECRET-partial');
      setTimeout(() => req.socket.destroy(), 20);
    };
    const error = await failure(
      httpCall(runtimeAgent(), requestTarget(`${base}/x`), { method: 'GET', headers: {} }, limits),
    );
    expect(error.status).toBe(200);
    expect(error.problem).toMatch(/^[A-Z_]+$|^connection failed$/);
    expect(error.message).not.toContain('SECRET');
  });

  it('names a refused connection by its code', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await failure(
      httpCall(runtimeAgent(), requestTarget(`http://127.0.0.1:${port}/`), { method: 'GET', headers: {} }, limits),
    );
    expect(error.problem).toBe('ECONNREFUSED');
  });
});

describe('httpCall over TLS', () => {
  let pki: RuntimeTlsPki;
  let stranger: CertAndKey;
  const servers: HttpsServer[] = [];

  beforeAll(() => {
    pki = runtimeTlsPki();
    stranger = createCa('stranger CA');
  });

  afterAll(async () => {
    for (const s of servers) s.closeAllConnections();
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  });

  interface Seen {
    servername: string | false | null;
    clientCommonName: unknown;
  }

  /** A real HTTPS server on loopback answering `secret` to everything, recording who reached a request. */
  async function tlsServer(
    cert: CertAndKey,
    requireClient = false,
  ): Promise<{ url: string; seen: Seen[]; handshakes: () => number }> {
    const seen: Seen[] = [];
    let handshakes = 0;
    const options = { key: cert.keyPem, cert: cert.certPem, ca: pki.ca.certPem };
    const tls = createHttpsServer(
      { ...options, requestCert: requireClient, rejectUnauthorized: requireClient },
      (req, res) => {
        const socket = req.socket as TLSSocket;
        seen.push({ servername: socket.servername, clientCommonName: socket.getPeerCertificate().subject?.CN });
        res.end('SECRET from the server');
      },
    );
    tls.on('secureConnection', () => (handshakes += 1));
    servers.push(tls);
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    return { url: `https://127.0.0.1:${(tls.address() as AddressInfo).port}/x`, seen, handshakes: () => handshakes };
  }

  const agentFor = (client?: CertAndKey) =>
    runtimeTlsAgent(tlsBundleFromSecretData(runtimeTlsSecretData(pki.ca.certPem, client), 'ns/tls'));
  const get = { method: 'GET' as const, headers: {} };

  it('answers from a runtime with the runtime name and our CA, sending that name as SNI', async () => {
    const server = await tlsServer(pki.server);
    const answer = await httpCall(agentFor(), requestTarget(server.url), get, limits);
    expect(answer).toEqual({ status: 200, body: 'SECRET from the server' });
    expect(server.seen).toEqual([{ servername: RUNTIME_TLS_SERVER_NAME, clientCommonName: undefined }]);
  });

  it('keeps one TLS connection for the requests of one delivery', async () => {
    const server = await tlsServer(pki.server);
    const agent = agentFor();
    for (let i = 0; i < 3; i += 1) await httpCall(agent, requestTarget(server.url), get, limits);
    expect(server.seen).toHaveLength(3);
    expect(server.handshakes()).toBe(1);
  });

  it('fails by code on a certificate another CA signed, sending nothing', async () => {
    const server = await tlsServer(runtimeServerCert(stranger));
    const error = await failure(httpCall(agentFor(), requestTarget(server.url), get, limits));
    expect(error.problem).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    expect(error.status).toBeUndefined();
    expect(server.seen).toEqual([]);
  });

  it('fails by code on a certificate for another name, sending nothing', async () => {
    const server = await tlsServer(runtimeServerCert(pki.ca, ['envd.other.example']));
    const error = await failure(httpCall(agentFor(), requestTarget(server.url), get, limits));
    expect(error.problem).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(server.seen).toEqual([]);
  });

  it('is accepted by a runtime that requires a client certificate, and refused by it without one', async () => {
    const server = await tlsServer(pki.server, true);
    expect((await httpCall(agentFor(pki.client), requestTarget(server.url), get, limits)).status).toBe(200);
    expect(server.seen.map((s) => s.clientCommonName)).toEqual(['sandbox-injector-deliver-env']);
    const error = await failure(httpCall(agentFor(), requestTarget(server.url), get, limits));
    // TLS 1.3: the server's alert comes after our side of the handshake, unless the reset overtakes it.
    expect(error.problem).toMatch(/^(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED|ECONNRESET)$/);
    expect(error.message).not.toContain('SECRET');
    expect(server.seen).toHaveLength(1);
  });

  it('gives up at the timeout on a server that never finishes the handshake', async () => {
    const silentSockets: Socket[] = [];
    const silent = createNetServer((socket) => silentSockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      const error = await failure(
        httpCall(agentFor(), requestTarget(`https://127.0.0.1:${port}/`), get, { ...limits, timeoutMs: 100 }),
      );
      expect(error.problem).toBe('timed out');
    } finally {
      await new Promise((resolve) => {
        silent.close(resolve);
        for (const socket of silentSockets) socket.destroy();
      });
    }
  });

  it('never sends an https URL through a plain agent, nor an http one through a TLS agent', async () => {
    const server = await tlsServer(pki.server);
    const plain = await failure(httpCall(runtimeAgent(), requestTarget(server.url), get, limits));
    expect(plain.problem).toBe('ERR_INVALID_PROTOCOL');
    const mixed = await failure(httpCall(agentFor(), requestTarget(`${base}/x`), get, limits));
    expect(mixed.problem).toBe('ERR_INVALID_PROTOCOL');
    expect(server.seen).toEqual([]);
    expect(server.handshakes()).toBe(0);
  });
});
