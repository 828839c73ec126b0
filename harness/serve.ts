/** The webhook as the bench and the soak start it: the product's build, `serve` on a free loopback port. */
import { createServer } from 'node:net';
import { CLI } from './repo.js';

/** A port nothing listens on right now, on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** node's arguments for `serve` on 127.0.0.1:`port`, without its metrics listener, then `flags`. */
export function serveArgs(port: number, ...flags: string[]): string[] {
  return [CLI, 'serve', '--host', '127.0.0.1', '--port', String(port), '--metrics-port', '0', ...flags];
}
