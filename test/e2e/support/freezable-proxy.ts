/**
 * A loopback TCP proxy that can freeze the connections it carries without closing them: the bytes stop in both
 * directions while both sockets stay open, so neither end sees an error, an end or a reset. That is what a
 * stalled middlebox or a half-dead connection looks like from a client: a watch that is simply silent.
 * Connections opened after a freeze pass normally. TLS goes through untouched, end to end.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface FreezableProxy {
  /** The loopback port it listens on. */
  port: number;
  /** Connections it carries now (frozen ones included). */
  readonly open: number;
  /** Stops every connection open now; returns how many. */
  freeze(): number;
  close(): Promise<void>;
}

export async function startFreezableProxy(target: { host: string; port: number }): Promise<FreezableProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  return {
    port: address.port,
    get open() {
      return pairs.size;
    },
    freeze() {
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
      return pairs.size;
    },
    async close() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
