/**
 * A TLS client that writes exactly the bytes a test gives it and reports what came back and whether the
 * server closed the connection. Transport tests need this where an HTTP client would hide the behaviour:
 * a body that stalls, a client that never reads, a request line no client library would send.
 */
import { connect, type ConnectionOptions, type TLSSocket } from 'node:tls';

export interface RawTlsConnection {
  socket: TLSSocket;
  /** Resolves once the handshake is done; rejects when it fails. */
  secure: Promise<void>;
  /** Everything read so far (latin1, so byte counts match). */
  received(): string;
  /** Resolves when the server has closed the connection (or it failed). */
  closed: Promise<{ error?: string }>;
  /** Resolves once `text` has arrived. */
  receivedText(text: string): Promise<string>;
  write(bytes: string | Buffer): Promise<void>;
  destroy(): void;
}

export interface RawTlsOptions {
  port: number;
  ca: Buffer;
  /** Leave the socket paused: nothing is ever read, as a client that sends and never reads. */
  neverRead?: boolean;
  tls?: Partial<ConnectionOptions>;
}

export function rawTls(options: RawTlsOptions): RawTlsConnection {
  const socket = connect({
    host: '127.0.0.1',
    port: options.port,
    ca: options.ca,
    servername: 'localhost',
    ...options.tls,
  });
  let text = '';
  const waiters: { text: string; resolve: (all: string) => void }[] = [];
  const secure = new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  // A handshake that fails also closes; that outcome is read from `secure`, never left unhandled.
  secure.catch(() => undefined);
  const closed = new Promise<{ error?: string }>((resolve) => {
    let error: string | undefined;
    socket.on('error', (cause: NodeJS.ErrnoException) => (error = cause.code ?? cause.message));
    socket.once('close', () => resolve(error === undefined ? {} : { error }));
  });
  if (options.neverRead === true) socket.pause();
  else {
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      for (const waiter of waiters.filter((w) => text.includes(w.text))) waiter.resolve(text);
    });
  }
  return {
    socket,
    secure,
    received: () => text,
    closed,
    receivedText: (wanted) =>
      text.includes(wanted) ? Promise.resolve(text) : new Promise((resolve) => waiters.push({ text: wanted, resolve })),
    write: (bytes) =>
      new Promise((resolve, reject) => socket.write(bytes, (error) => (error ? reject(error) : resolve()))),
    destroy: () => socket.destroy(),
  };
}

/** A POST /mutate as raw bytes; `length` may claim more than `body` holds, to leave the body unfinished. */
export function postHead(length: number, headers: Record<string, string> = {}): string {
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return `POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;
}

/** A POST /mutate of `body` as raw bytes: all of it, or only its first `sent` bytes, leaving the body unfinished. */
export function postRequest(body: Buffer, sent = body.length): Buffer {
  return Buffer.concat([Buffer.from(postHead(body.length)), body.subarray(0, sent)]);
}

/** The status line and headers of the first answer in `text`, lower-cased names. */
export function parseHead(text: string): { status: number; headers: Record<string, string>; body: string } {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(end + 4, end + 4 + length) };
}
