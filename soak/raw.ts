/**
 * Hand-written HTTP over TLS sockets, for the clients node:https will not be: ones that never read, stall
 * mid-body, or send a byte at a time. Each connection records when and how the server ended it.
 */
import { connect, type TLSSocket } from 'node:tls';
import type { Target } from './http.js';

export class RawConnection {
  closedAt: number | undefined;
  /** The status line of the first answer, if any came ("HTTP/1.1 408 Request Timeout"). */
  firstLine: string | undefined;
  received = 0;
  error: string | undefined;
  /** The harness ended it, as opposed to the server. */
  closedByUs = false;

  constructor(
    readonly socket: TLSSocket,
    private readonly t0: number,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.received += chunk.length;
      this.firstLine ??= chunk.toString('latin1').split('\r\n', 1)[0];
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.error ??= error.code ?? error.message;
    });
    socket.on('close', () => {
      this.closedAt ??= (performance.now() - this.t0) / 1000;
    });
  }

  get open(): boolean {
    return this.closedAt === undefined;
  }

  /** Closed by the server rather than by the harness at the end of the hold. */
  get closedByServer(): boolean {
    return this.closedAt !== undefined && !this.closedByUs;
  }

  end(): void {
    if (this.closedAt === undefined) this.closedByUs = true;
    this.socket.destroy();
  }
}

export function connectRaw(target: Target, t0: number, timeoutMs = 15_000): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: target.port, ca: target.ca, servername: 'localhost' });
    const timer = setTimeout(() => socket.destroy(new Error(`no TLS handshake within ${timeoutMs} ms`)), timeoutMs);
    const failed = (error: Error): void => {
      clearTimeout(timer);
      reject(error);
    };
    socket.once('error', failed);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      socket.off('error', failed);
      resolve(new RawConnection(socket, t0));
    });
  });
}

export function requestHead(contentLength: number, extra = ''): string {
  return `POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n${extra}\r\n`;
}

/**
 * The server's body limit, found from outside: a request that only declares its length is refused at once
 * with 413 above the limit, and left waiting for its body at or below it. The limit a 413 names is tried
 * first; if it does not check out, a binary search over declared lengths finds it.
 */
export async function probeBodyLimit(target: Target): Promise<{ limit: number; how: string } | undefined> {
  const refused = async (length: number): Promise<{ refused: boolean; text: string }> => {
    const connection = await connectRaw(target, performance.now());
    let text = '';
    connection.socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    connection.socket.write(requestHead(length));
    const deadline = performance.now() + 1_500;
    while (performance.now() < deadline && !/^HTTP\/1\.1 \d{3}/.test(text) && connection.open) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    connection.end();
    return { refused: text.startsWith('HTTP/1.1 413'), text };
  };
  const ceiling = 256 * 1024 * 1024;
  const top = await refused(ceiling);
  if (!top.refused) return undefined;
  const named = /(\d[\d,_]*) ?-?bytes?/i.exec(top.text)?.[1]?.replace(/[,_]/g, '');
  if (named !== undefined) {
    const limit = Number(named);
    if (!(await refused(limit)).refused && (await refused(limit + 1)).refused)
      return { limit, how: 'named by its 413, checked at the limit and one over' };
  }
  let low = 0;
  let high = ceiling;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if ((await refused(middle)).refused) high = middle;
    else low = middle;
  }
  return { limit: low, how: 'binary search over declared lengths' };
}
