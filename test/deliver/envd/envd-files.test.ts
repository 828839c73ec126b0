import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envdFiles } from '../../../src/deliver/envd/envd-files.js';
import type { LeaderTerm } from '../../../src/deliver/leadership/leader-election.js';

let server: Server;
let port: number;
const seen: { method: string | undefined; url: string | undefined; host: string | undefined; token: unknown }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, host: req.headers.host, token: req.headers['x-access-token'] });
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(req.url?.includes('ListDir') === true ? '{"entries":[]}' : '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const guard: LeaderTerm = { signal: new AbortController().signal, fresh: () => true };

describe('envdFiles', () => {
  it("sends every request under the runtime URL's own path, to its host, with the token", async () => {
    seen.length = 0;
    const envd = envdFiles({ timeoutMs: 2000, maxBodyBytes: 4096, user: 'root' });
    const endpoint = { url: `http://127.0.0.1:${port}/sbx/7`, tlsAgent: undefined, accessToken: 'tok' };
    await envd.list(endpoint, '/var/sandbox', guard);
    await envd.run(endpoint, { op: 'move', source: '/var/sandbox/a', destination: '/var/sandbox/b' }, guard);
    await envd.readFile(endpoint, '/var/sandbox/.env_ready', guard);
    expect(seen).toEqual([
      { method: 'POST', url: '/sbx/7/filesystem.Filesystem/ListDir', host: `127.0.0.1:${port}`, token: 'tok' },
      { method: 'POST', url: '/sbx/7/filesystem.Filesystem/Move', host: `127.0.0.1:${port}`, token: 'tok' },
      {
        method: 'GET',
        url: '/sbx/7/files?path=%2Fvar%2Fsandbox%2F.env_ready&username=root',
        host: `127.0.0.1:${port}`,
        token: 'tok',
      },
    ]);
  });

  it('sends to the root of a runtime URL without a path, and no token header when there is none', async () => {
    seen.length = 0;
    const envd = envdFiles({ timeoutMs: 2000, maxBodyBytes: 4096, user: 'root' });
    await envd.list({ url: `http://127.0.0.1:${port}`, tlsAgent: undefined, accessToken: undefined }, '/x', guard);
    expect(seen).toEqual([
      { method: 'POST', url: '/filesystem.Filesystem/ListDir', host: `127.0.0.1:${port}`, token: undefined },
    ]);
  });
});
