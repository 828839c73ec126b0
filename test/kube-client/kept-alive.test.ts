import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa, issueServing, type CertifiedKey } from '../../src/certs/pki.js';
import { KeptAliveAgents, keptAliveClient } from '../../src/kube-client/kept-alive.js';

// A real HTTPS server on loopback that answers GET /api/v1/namespaces/<name> and records, per request, which
// TLS connection carried it, the client certificate on that connection and the Authorization header.
interface Seen {
  connection: number;
  clientCert: string | undefined;
  authorization: string | undefined;
}

let ca: CertifiedKey;
let clientA: CertifiedKey;
let clientB: CertifiedKey;
let server: Server;
let url: string;
let connections = 0;
const seen: Seen[] = [];
const connectionIds = new WeakMap<object, number>();

beforeAll(async () => {
  const now = new Date();
  ca = await createCa(now, 1);
  const serving = await issueServing(ca, { commonName: 'api', dnsNames: [], ipAddresses: ['127.0.0.1'] }, now, 1);
  clientA = await issueServing(ca, { commonName: 'client-a', dnsNames: [], ipAddresses: [] }, now, 1);
  clientB = await issueServing(ca, { commonName: 'client-b', dnsNames: [], ipAddresses: [] }, now, 1);
  // The client certificate is recorded, not verified: what is tested is which one each connection presents.
  server = createServer(
    { cert: serving.certPem, key: serving.keyPem, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      const socket = req.socket as TLSSocket;
      const raw = socket.getPeerCertificate().raw as Buffer | undefined;
      seen.push({
        connection: connectionIds.get(socket) ?? -1,
        clientCert: raw === undefined ? undefined : createHash('sha256').update(raw).digest('hex'),
        authorization: req.headers.authorization,
      });
      const name = decodeURIComponent(req.url?.split('/').pop() ?? '');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
    },
  );
  server.on('secureConnection', (socket) => connectionIds.set(socket, (connections += 1)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function kubeConfig(client: CertifiedKey, token: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: url, caData: Buffer.from(ca.certPem).toString('base64'), skipTLSVerify: false }],
    users: [
      {
        name: 'u',
        token,
        certData: Buffer.from(client.certPem).toString('base64'),
        keyData: Buffer.from(client.keyPem).toString('base64'),
      },
    ],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

function fingerprint(pair: CertifiedKey): string {
  return createHash('sha256').update(pair.cert.raw).digest('hex');
}

/** The requests and connections that `run` caused. */
async function observe(run: () => Promise<void>): Promise<{ requests: Seen[]; connections: number }> {
  const requestsBefore = seen.length;
  const connectionsBefore = connections;
  await run();
  return { requests: seen.slice(requestsBefore), connections: connections - connectionsBefore };
}

describe('keptAliveClient', () => {
  it('client-node alone opens a TLS connection per call (why kept-alive.ts exists)', async () => {
    const api = kubeConfig(clientA, 't').makeApiClient(CoreV1Api);
    const { requests, connections: opened } = await observe(async () => {
      for (const name of ['a', 'b', 'c']) await api.readNamespace({ name });
    });
    expect(requests).toHaveLength(3);
    expect(opened).toBe(3);
  });

  it('sends sequential calls over one kept-alive connection, authenticated per call', async () => {
    const api = keptAliveClient(kubeConfig(clientA, 'token-a'), CoreV1Api, new KeptAliveAgents());
    const { requests, connections: opened } = await observe(async () => {
      for (const name of ['a', 'b', 'c']) expect((await api.readNamespace({ name })).metadata?.name).toBe(name);
    });
    expect(opened).toBe(1);
    expect(new Set(requests.map((r) => r.connection)).size).toBe(1);
    expect(requests.map((r) => r.authorization)).toEqual(Array(3).fill('Bearer token-a'));
    expect(requests.map((r) => r.clientCert)).toEqual(Array(3).fill(fingerprint(clientA)));
  });

  it('uses a rotated token at once, on the same connection', async () => {
    const kc = kubeConfig(clientA, 'before');
    const api = keptAliveClient(kc, CoreV1Api, new KeptAliveAgents());
    const { requests, connections: opened } = await observe(async () => {
      await api.readNamespace({ name: 'a' });
      (kc.users[0] as { token?: string }).token = 'after';
      await api.readNamespace({ name: 'b' });
    });
    expect(opened).toBe(1);
    expect(requests.map((r) => r.authorization)).toEqual(['Bearer before', 'Bearer after']);
  });

  it('keeps a pool per client certificate: a rotated certificate gets connections of its own', async () => {
    const agents = new KeptAliveAgents();
    const a = keptAliveClient(kubeConfig(clientA, 't'), CoreV1Api, agents);
    const b = keptAliveClient(kubeConfig(clientB, 't'), CoreV1Api, agents);
    const { requests, connections: opened } = await observe(async () => {
      for (const api of [a, b, a, b]) await api.readNamespace({ name: 'n' });
    });
    expect(opened).toBe(2);
    expect(requests.map((r) => r.clientCert)).toEqual([
      fingerprint(clientA),
      fingerprint(clientB),
      fingerprint(clientA),
      fingerprint(clientB),
    ]);
    expect(requests[0]?.connection).toBe(requests[2]?.connection);
    expect(requests[1]?.connection).toBe(requests[3]?.connection);
  });
});
