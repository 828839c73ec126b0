/**
 * Each limit of the webhook port against the client that breaks it, over real TLS sockets: a body that
 * stalls, a body that trickles, headers that never end, a kept-alive connection left idle, a client that
 * never reads its answers, too many connections, more bodies in flight than the budget, requests the HTTP
 * parser refuses. Timeouts are made small through the limits and the tests wait for what the server does
 * (an answer, a close, a counted refusal), never for a length of time.
 */
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransportLimits } from '../../src/server/transport.js';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { parseHead, postHead, postRequest, rawTls, type RawTlsConnection } from './support/raw-tls.js';
import { servingPki, temporaryDirectory } from './support/pki.js';
import { nextEvent, startTestServer, type TestServer } from './support/server.js';

const basic = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic');
if (basic === undefined) throw new Error('conformance case agent-runtime-basic is missing');

let tlsFiles: Awaited<ReturnType<typeof servingPki>>;
let removeDir: () => Promise<void>;
beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('limits');
  removeDir = remove;
  tlsFiles = await servingPki(dir);
});
afterAll(() => removeDir());

/** A server with these limits, and every client a test opens, all closed when `body` ends. */
async function withServer(
  limits: Partial<TransportLimits>,
  body: (server: TestServer, open: (options?: { neverRead?: boolean }) => RawTlsConnection) => Promise<void>,
): Promise<void> {
  const server = await startTestServer({ tls: tlsFiles, caFile: tlsFiles.caCertFile, limits });
  server.setConfig(basic?.configMap?.data as Record<string, string>);
  const clients: RawTlsConnection[] = [];
  const open = (options: { neverRead?: boolean } = {}): RawTlsConnection => {
    const client = rawTls({ port: server.port, ca: server.caPem, ...options });
    clients.push(client);
    return client;
  };
  try {
    await body(server, open);
  } finally {
    for (const client of clients) client.destroy();
    await server.close();
  }
}

/** A review of exactly `bytes` bytes (padded in a label), whose answer is small. */
function reviewOfSize(bytes: number, uid = 'sized'): Buffer {
  const pod = structuredClone(basic?.pod) as { metadata: { labels?: Record<string, string> } };
  pod.metadata.labels = { ...pod.metadata.labels, padding: '' };
  const empty = Buffer.byteLength(JSON.stringify(reviewFor(pod, uid)));
  pod.metadata.labels.padding = 'x'.repeat(bytes - empty);
  return Buffer.from(JSON.stringify(reviewFor(pod, uid)));
}

/**
 * A review whose answer is larger than the review: with EnvVarsInjectionPolicy Auto the main container's
 * command moves into its args, which the patch carries whole, base64-encoded.
 */
function reviewWithLargeAnswer(commandBytes: number): Buffer {
  const pod = structuredClone(basic?.pod) as {
    metadata: { annotations: Record<string, string> };
    spec: { containers: { command?: string[] }[] };
  };
  pod.metadata.annotations['agents.kruise.io/env-vars-injection-policy'] = 'Auto';
  const main = pod.spec.containers[0];
  if (main === undefined) throw new Error('case has no container');
  main.command = ['python', 'x'.repeat(commandBytes)];
  return Buffer.from(JSON.stringify(reviewFor(pod, 'large-answer')));
}

async function refusals(server: TestServer, reason: string): Promise<number> {
  const metric = await server.metrics.registry.getSingleMetric('sandbox_injector_transport_refusals_total')?.get();
  return metric?.values.find((v) => v.labels.reason === reason)?.value ?? Number.NaN;
}

function errorBody(text: string): unknown {
  return JSON.parse(parseHead(text).body);
}

describe('the request timeout (--request-timeout)', () => {
  it('answers a body that stalls halfway with 408 in our shape, Connection: close, and closes', async () => {
    await withServer({ requestTimeoutMs: 200 }, async (server, open) => {
      const client = open();
      await client.secure;
      const body = reviewOfSize(2000);
      await client.write(postRequest(body, 1000));
      await client.closed;

      const answer = parseHead(client.received());
      expect(answer.status).toBe(408);
      expect(answer.headers.connection).toBe('close');
      expect(errorBody(client.received())).toEqual({
        message: 'the request was not received within 0.2s',
        code: 'SI_REQUEST_TIMEOUT',
      });
      expect(await refusals(server, 'request_timeout')).toBe(1);
    });
  });

  it('answers a body sent a byte at a time with 408, though bytes keep arriving', async () => {
    await withServer({ requestTimeoutMs: 200 }, async (_server, open) => {
      const client = open();
      await client.secure;
      const body = reviewOfSize(4000);
      await client.write(postHead(body.length));
      let sent = 0;
      const trickle = setInterval(() => {
        if (sent < body.length && !client.socket.destroyed) client.socket.write(body.subarray(sent, ++sent));
      }, 10);
      try {
        await client.closed;
      } finally {
        clearInterval(trickle);
      }
      expect(sent).toBeLessThan(body.length);
      expect(parseHead(client.received()).status).toBe(408);
    });
  });

  it('answers headers that never end with 408', async () => {
    await withServer({ requestTimeoutMs: 200 }, async (_server, open) => {
      const client = open();
      await client.secure;
      await client.write('POST /mutate HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
      await client.closed;
      expect(parseHead(client.received()).status).toBe(408);
    });
  });
});

describe('the idle timeout (--idle-timeout)', () => {
  it('closes a kept-alive connection left idle after its answer', async () => {
    await withServer({ idleTimeoutMs: 100 }, async (_server, open) => {
      const client = open();
      await client.secure;
      await client.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await client.receivedText('{"status":"ok"}');
      expect(parseHead(client.received()).headers.connection).toBe('keep-alive');
      expect(await client.closed).toEqual({});
    });
  });
});

describe('answers the client does not read', () => {
  // Much more than the kernel buffers of a connection whose reader never reads, so most of it stays with us.
  const commandBytes = 9 * 1024 * 1024;
  const bigLimits = { maxBodyBytes: 16 * 1024 * 1024, maxInflightBytes: 64 * 1024 * 1024 };

  it('closes a connection that sends its next request with an answer still unsent (--max-unread-bytes)', async () => {
    await withServer({ ...bigLimits, maxUnreadBytes: 64 * 1024, requestTimeoutMs: 600_000 }, async (server, open) => {
      const client = open({ neverRead: true });
      await client.secure;
      const review = reviewWithLargeAnswer(commandBytes);
      // The reservation grows from the body to the answer when the answer is written.
      const answered = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes > review.length);
      await client.write(postRequest(review));
      await answered;
      // The client reads nothing, so it would never see the close: the server's side is watched instead.
      const closed = nextEvent<number>(server.transport, 'connections', (open) => open === 0);
      const released = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes === 0);
      await client.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await closed;
      await released;
      expect(await refusals(server, 'unread_response')).toBe(1);
    });
  });

  it('closes a connection that sends a review before the one before it is answered (pipelining)', async () => {
    await withServer({ ...bigLimits, requestTimeoutMs: 600_000 }, async (server, open) => {
      const client = open();
      await client.secure;
      const reviews = [reviewOfSize(2_000, 'first'), reviewOfSize(2_000, 'second')];
      // One write: the second request arrives while the first is still being reviewed, as a client that
      // never waits for its answers sends them.
      await client.write(Buffer.concat(reviews.map((review) => postRequest(review))));
      const outcome = await Promise.race([
        client.closed.then(() => 'closed'),
        client.receivedText('"uid":"second"').then(() => 'both answered'),
      ]);
      expect(outcome).toBe('closed');
      expect(client.received()).not.toContain('"uid":"second"');
      expect(await refusals(server, 'unread_response')).toBe(1);
    });
  });

  it('answers reviews sent one after another on a kept-alive connection, each after its answer', async () => {
    await withServer({ ...bigLimits, requestTimeoutMs: 600_000 }, async (server, open) => {
      const client = open();
      await client.secure;
      for (const uid of ['first', 'second', 'third']) {
        const review = reviewOfSize(2_000, uid);
        await client.write(postRequest(review));
        await client.receivedText(`"uid":"${uid}"`);
      }
      expect(client.received().match(/HTTP\/1\.1 200 /g)).toHaveLength(3);
      expect(await refusals(server, 'unread_response')).toBe(0);
    });
  });

  it('closes a connection whose one answer is never read once nothing has moved for the request timeout', async () => {
    // The timeout counts inactivity, and the upload of the review must not look inactive: on a loaded machine a
    // client can stall for a fifth of a second mid-write, and a timeout then is no unread answer. One second
    // leaves the upload room and still ends the test soon after the answer stops moving.
    await withServer({ ...bigLimits, requestTimeoutMs: 1_000 }, async (server, open) => {
      const client = open({ neverRead: true });
      await client.secure;
      const closed = nextEvent<number>(server.transport, 'connections', (open) => open === 0);
      const released = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes === 0);
      const review = reviewWithLargeAnswer(commandBytes);
      await client.write(postRequest(review));
      await closed;
      await released;
      expect(await refusals(server, 'unread_response')).toBe(1);
    });
  });

  it('closes the listener in a drain without cutting an answer still being written out', async () => {
    await withServer({ ...bigLimits, requestTimeoutMs: 600_000 }, async (server, open) => {
      server.startDraining();
      const client = open({ neverRead: true });
      await client.secure;
      const review = reviewWithLargeAnswer(commandBytes);
      const answered = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes > review.length);
      await client.write(postRequest(review));
      await answered;
      // Between two requests, to Node: the review is read and its answer handed to the socket, not yet sent.
      const closing = server.close();
      const chunks: Buffer[] = [];
      client.socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      client.socket.resume();
      await client.closed;
      await closing;
      const text = Buffer.concat(chunks).toString('latin1');
      const answer = parseHead(text);
      expect(answer.status).toBe(200);
      expect(answer.headers.connection).toBe('close');
      expect(text.length - text.indexOf('\r\n\r\n') - 4).toBe(Number(answer.headers['content-length']));
    });
  });
});

describe('the connection cap (--max-connections)', () => {
  // A grace no test outlives: the connections below must not count as slow clients.
  const patient = 3_600_000;

  /** A request line and part of a header, never finished: a connection that is still arriving. */
  const unfinished = 'POST /mutate HTTP/1.1\r\nHost: localhost\r\nX-Slow: ';

  /** Each client sends one request and reads its answer: kept alive, idle, and just used. */
  async function usedOnce(clients: RawTlsConnection[]): Promise<void> {
    for (const client of clients) {
      await client.secure;
      await client.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await client.receivedText('"ok"');
    }
  }

  /** Each client sends part of a request and stops: connections still arriving, oldest first. */
  async function stalled(clients: RawTlsConnection[]): Promise<void> {
    for (const client of clients) {
      await client.secure;
      await client.write(unfinished);
    }
  }

  /** Opens a connection at the cap, waits until it made room by evicting one, and checks it is served. */
  async function openEvicting(server: TestServer, open: () => RawTlsConnection): Promise<void> {
    const evicted = nextEvent(server.transport, 'refused', (reason) => reason === 'evicted');
    const fresh = open();
    await fresh.secure;
    await evicted;
    await fresh.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    expect(parseHead(await fresh.receivedText('"ok"')).status).toBe(200);
  }

  it('closes a new connection when every one is in use, and serves again once one has gone', async () => {
    await withServer({ maxConnections: 3, slowClientGraceMs: patient }, async (server, open) => {
      const serverSockets: Socket[] = [];
      server.app.server.on('secureConnection', (socket: Socket) => serverSockets.push(socket));
      const first = [open(), open(), open()];
      await usedOnce(first);

      const dropped = nextEvent(server.transport, 'refused', (reason) => reason === 'connection_limit');
      const extra = open();
      await expect(extra.secure).rejects.toThrow();
      await dropped;
      expect(await refusals(server, 'connection_limit')).toBe(1);
      expect(await refusals(server, 'evicted')).toBe(0);

      const gone = serverSockets[0];
      if (gone === undefined) throw new Error('no server-side socket');
      first[0]?.destroy();
      await once(gone, 'close');
      const later = open();
      await later.secure;
      await later.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      expect(parseHead(await later.receivedText('"ok"')).status).toBe(200);
    });
  });

  it('in a flood of new connections, closes the one arriving longest, not one just used', async () => {
    await withServer({ maxConnections: 3, slowClientGraceMs: patient }, async (server, open) => {
      const used = open();
      await usedOnce([used]);
      const flood = [open(), open()];
      await stalled(flood);
      await openEvicting(server, open);
      expect(await flood[0]?.closed).toBeDefined();
      expect(flood[1]?.socket.destroyed).toBe(false);
      expect(used.socket.destroyed).toBe(false);
    });
  });

  it('at the cap, closes the connection arriving longest past the grace to serve a new one', async () => {
    await withServer({ maxConnections: 3, slowClientGraceMs: 0 }, async (server, open) => {
      const slow = [open(), open(), open()];
      await stalled(slow);
      await openEvicting(server, open);
      // The first to arrive is the first to go; the others are still open.
      expect(await slow[0]?.closed).toBeDefined();
      expect(slow[1]?.socket.destroyed).toBe(false);
      expect(slow[2]?.socket.destroyed).toBe(false);
      expect(await refusals(server, 'evicted')).toBe(1);
      expect(await refusals(server, 'connection_limit')).toBe(0);
    });
  });

  it('at the cap with no slow client, closes the connection idle longest past the grace', async () => {
    await withServer({ maxConnections: 2, slowClientGraceMs: 0 }, async (server, open) => {
      const older = open();
      const newer = open();
      await usedOnce([older, newer]);
      await openEvicting(server, open);
      expect(await older.closed).toBeDefined();
      expect(newer.socket.destroyed).toBe(false);
      await newer.write('GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      const second = (await newer.receivedText('"status":"ready"')).split('"status":"ok"}').at(-1) ?? '';
      expect(parseHead(second).status).toBe(200);
    });
  });
});

describe('the in-flight byte budget (--max-inflight-bytes)', () => {
  const limits = { maxBodyBytes: 48 * 1024, maxInflightBytes: 64 * 1024, slowClientGraceMs: 3_600_000 };
  const size = 40 * 1024;

  it('answers a body that does not fit 503 with Retry-After, keeps the connection, and serves it once bytes are free', async () => {
    await withServer(limits, async (server, open) => {
      const holder = open();
      await holder.secure;
      const held = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes >= size);
      const first = reviewOfSize(size, 'first');
      await holder.write(postRequest(first, 100));
      await held;

      const second = open();
      await second.secure;
      const secondReview = reviewOfSize(size, 'second');
      const request = postRequest(secondReview);
      await second.write(request);
      const busy = parseHead(await second.receivedText('SI_BUSY'));
      expect(busy.status).toBe(503);
      expect(busy.headers['retry-after']).toBe('1');
      expect(busy.headers.connection).toBe('keep-alive');
      expect(JSON.parse(busy.body)).toMatchObject({
        code: 'SI_BUSY',
        message: expect.stringContaining('busy') as unknown,
      });

      const free = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes === 0);
      await holder.write(first.subarray(100));
      expect(parseHead(await holder.receivedText('"uid":"first"')).status).toBe(200);
      await free;

      await second.write(request);
      expect(parseHead((await second.receivedText('"uid":"second"')).split('SI_BUSY"}').at(-1) ?? '').status).toBe(200);
      expect(await refusals(server, 'busy')).toBe(1);
    });
  });

  it('answers a chunked body that passes the budget 503 with Connection: close', async () => {
    await withServer(limits, async (server, open) => {
      const holder = open();
      await holder.secure;
      const held = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes >= size);
      await holder.write(postHead(size) + '{');
      await held;

      const chunked = open();
      await chunked.secure;
      await chunked.write(
        'POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
      );
      const chunk = 'x'.repeat(8 * 1024);
      for (let i = 0; i < 4; i += 1) await chunked.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      await chunked.closed;
      const answer = parseHead(chunked.received());
      expect(answer.status).toBe(503);
      expect(answer.headers.connection).toBe('close');
      expect(answer.headers['retry-after']).toBe('1');
      expect(await refusals(server, 'busy')).toBe(1);
    });
  });
});

describe('room kept for small requests in the byte budget', () => {
  it('large bodies stalled within the grace hold at most three quarters of it: small reviews still get in', async () => {
    // Large: over 64 KiB / 8 = 8 KiB. Large bodies together may hold 48 KiB; the grace never runs out here.
    await withServer(
      { maxBodyBytes: 20 * 1024, maxInflightBytes: 64 * 1024, slowClientGraceMs: 3_600_000 },
      async (server, open) => {
        const size = 20 * 1024;
        for (const uid of ['s1', 's2']) {
          const staller = open();
          await staller.secure;
          const held = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes >= size);
          await staller.write(postRequest(reviewOfSize(size, uid), 100));
          await held;
        }
        const third = open();
        await third.secure;
        await third.write(postRequest(reviewOfSize(size, 's3'), 100));
        expect(parseHead(await third.receivedText('SI_BUSY')).status).toBe(503);

        for (const uid of ['small-1', 'small-2']) {
          const client = open();
          await client.secure;
          const review = reviewOfSize(6 * 1024, uid);
          await client.write(postRequest(review));
          expect(parseHead(await client.receivedText(`"uid":"${uid}"`)).status).toBe(200);
        }
        expect(await refusals(server, 'busy')).toBe(1);
      },
    );
  });
});

describe('bodies that stall while others wait for the byte budget', () => {
  it('closes the body arriving longest past the grace, hands its bytes back, and serves the new one', async () => {
    await withServer(
      { maxBodyBytes: 48 * 1024, maxInflightBytes: 64 * 1024, slowClientGraceMs: 0 },
      async (server, open) => {
        const size = 40 * 1024;
        const staller = open();
        await staller.secure;
        const held = nextEvent<number>(server.transport, 'inflight', (bytes) => bytes >= size);
        const stalled = reviewOfSize(size, 'stalled');
        await staller.write(postRequest(stalled, 100));
        await held;

        const next = open();
        await next.secure;
        const review = reviewOfSize(size, 'next');
        await next.write(postRequest(review));
        expect(parseHead(await next.receivedText('"uid":"next"')).status).toBe(200);
        expect(await staller.closed).toBeDefined();
        expect(staller.received()).toBe('');
        expect(await refusals(server, 'evicted')).toBe(1);
        expect(await refusals(server, 'busy')).toBe(0);
      },
    );
  });
});

describe("the HTTP parser's refusals, in our shape", () => {
  it.each([
    [
      'a malformed header line',
      'GET /healthz HTTP/1.1\r\nHost: localhost\r\nno colon here\r\n\r\n',
      400,
      'SI_BAD_HTTP',
    ],
    [
      'headers over the size limit',
      `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'y'.repeat(20_000)}\r\n\r\n`,
      431,
      'SI_HEADERS_TOO_LARGE',
    ],
  ])('%s: answered $2 {message, code} with Connection: close, then closed', async (_what, bytes, status, code) => {
    await withServer({}, async (server, open) => {
      const client = open();
      await client.secure;
      await client.write(bytes);
      await client.closed;
      const answer = parseHead(client.received());
      expect(answer.status).toBe(status);
      expect(answer.headers.connection).toBe('close');
      expect(JSON.parse(answer.body)).toEqual({ message: expect.any(String) as unknown, code });
      expect(await refusals(server, 'bad_http')).toBe(1);
      // Logged before the answer is written, so it is there once the connection has closed.
      expect(server.logs).toMatchObject([{ level: 'warn', message: 'request refused', fields: { status, code } }]);
    });
  });

  it('answers a body that is not JSON 400 {message, code} with Connection: close', async () => {
    await withServer({}, async (_server, open) => {
      const client = open();
      await client.secure;
      await client.write(`${postHead(8)}{"broken`);
      await client.closed;
      const answer = parseHead(client.received());
      expect(answer.status).toBe(400);
      expect(answer.headers.connection).toBe('close');
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'SI_BODY_NOT_JSON' });
    });
  });

  it('answers a body over the body limit 413 {message, code} with Connection: close', async () => {
    await withServer({ maxBodyBytes: 4096 }, async (_server, open) => {
      const client = open();
      await client.secure;
      await client.write(postHead(5000));
      await client.closed;
      const answer = parseHead(client.received());
      expect(answer.status).toBe(413);
      expect(answer.headers.connection).toBe('close');
      expect(JSON.parse(answer.body)).toEqual({
        message: 'request body is larger than the 4096 byte limit',
        code: 'SI_BODY_TOO_LARGE',
      });
    });
  });
});
