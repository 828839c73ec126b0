import { createServer, type Server, type ServerResponse, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpCall, HttpCallError, multipartFile, runtimeAgent } from '../../src/deliver/http-call.js';
import { propertyRuns } from '../support/property-runs.js';

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

describe('multipartFile', () => {
  it('is read back whole by an independent multipart parser, for any content', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ unit: 'grapheme' }), fc.constantFrom('--', '\r\n--x--\r\n', 'a\r\n\r\nb', '')),
        async (content) => {
          const form = multipartFile('file', 'env.sh', content);
          const parsed = await new Response(form.body, { headers: { 'content-type': form.type } }).formData();
          const file = parsed.get('file') as File;
          expect(file.name).toBe('env.sh');
          expect(await file.text()).toBe(content);
        },
      ),
      { numRuns: propertyRuns(300) },
    );
  });

  it('escapes a quote or a line break in a file name instead of ending the header', async () => {
    const form = multipartFile('file', 'a"b\r\nc', 'x');
    const parsed = await new Response(form.body, { headers: { 'content-type': form.type } }).formData();
    expect([...parsed.keys()]).toEqual(['file']);
    expect(form.body.toString('latin1')).toContain('filename="a%22b%0D%0Ac"');
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
      `${base}/x`,
      { method: 'POST', headers: {}, body: Buffer.from('héllo') },
      limits,
    );
    expect(answer).toEqual({ status: 201, body: 'POST 6 héllo' });
  });

  it('keeps one connection for the requests of one delivery', async () => {
    handler = (_req, res) => res.end('ok');
    const agent = runtimeAgent();
    const before = connections;
    for (let i = 0; i < 3; i += 1) await httpCall(agent, `${base}/x`, { method: 'GET', headers: {} }, limits);
    expect(connections - before).toBe(1);
  });

  it('does not follow a redirect', async () => {
    handler = (_req, res) => {
      res.writeHead(302, { location: 'http://192.0.2.1/' });
      res.end();
    };
    expect((await httpCall(runtimeAgent(), `${base}/x`, { method: 'GET', headers: {} }, limits)).status).toBe(302);
  });

  it('stops reading past the size bound, keeping the status', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('x'.repeat(4096));
      setTimeout(() => res.end('y'.repeat(4096)), 50);
    };
    const error = await failure(httpCall(runtimeAgent(), `${base}/x`, { method: 'GET', headers: {} }, limits));
    expect(error.problem).toBe('answer too large');
    expect(error.status).toBe(200);
  });

  it('gives up at the timeout on a server that never answers', async () => {
    handler = () => undefined;
    const error = await failure(
      httpCall(runtimeAgent(), `${base}/x`, { method: 'GET', headers: {} }, { ...limits, timeoutMs: 100 }),
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
    const error = await failure(httpCall(runtimeAgent(), `${base}/x`, { method: 'GET', headers: {} }, limits));
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
      httpCall(runtimeAgent(), `http://127.0.0.1:${port}/`, { method: 'GET', headers: {} }, limits),
    );
    expect(error.problem).toBe('ECONNREFUSED');
  });
});
