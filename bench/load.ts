/**
 * The two kinds of load. Peak: autocannon, each keep-alive connection sending its next review as soon as the
 * last is answered, which finds the most a server can do. Fixed rate: reviews sent on a schedule whatever the
 * server does, as kube-apiserver sends them, which shows the latency a cluster sees at a given rate.
 *
 * Latencies are kept whole, in fractional milliseconds, rather than read from autocannon's histogram, which
 * rounds to whole milliseconds: at a fixed rate below the peak, answers take one or two of them.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type TLSSocket } from 'node:tls';
import autocannon from 'autocannon';
import { quantile } from '../harness/quantiles.js';

export interface LoadTarget {
  port: number;
  body: string;
  ca: Buffer;
  connections: number;
}

export interface Latency {
  p50: number;
  p99: number;
  max: number;
}

export interface LoadResult {
  /** Answered with a 2xx, per second of the run. */
  admissionsPerSecond: number;
  answered: number;
  /** Connection errors, timeouts, non-2xx answers, and at a fixed rate reviews never answered. */
  errors: number;
  latency: Latency;
  /** Fixed rate only: how late the load generator sent, p99 in ms; if large, it, not the server, was behind. */
  senderLagP99?: number;
}

/** The samples' median, p99 and largest; NaN for none. */
export function latencyOf(samples: number[]): Latency {
  const sorted = Float64Array.from(samples).sort();
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] ?? NaN };
}

function autocannonRun(target: LoadTarget, seconds: number, overallRate?: number): Promise<LoadResult> {
  const samples: number[] = [];
  const instance = autocannon({
    url: `https://127.0.0.1:${target.port}/mutate`,
    connections: target.connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: target.body,
    tlsOptions: { ca: target.ca },
    servername: 'localhost',
    ...(overallRate === undefined ? {} : { overallRate }),
  });
  instance.on('response', (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) samples.push(ms);
  });
  return new Promise((resolve, reject) => {
    instance.then((result) => {
      resolve({
        admissionsPerSecond: result['2xx'] / result.duration,
        answered: result['2xx'],
        errors: result.errors + result.timeouts + result.non2xx,
        latency: latencyOf(samples),
      });
    }, reject);
  });
}

/** As many reviews as the connections can carry, each sent when the one before it on its connection is answered. */
export function peak(target: LoadTarget, seconds: number): Promise<LoadResult> {
  return autocannonRun(target, seconds);
}

/**
 * autocannon's `overallRate`: every connection gets rate/connections reviews per second and sends them back to
 * back at the start of each second, then waits. At half the peak the server is saturated for half of each
 * second and idle for the rest, so the latencies are those of bursts, not of a steady rate. Kept to compare.
 */
export function autocannonRate(target: LoadTarget, rate: number, seconds: number): Promise<LoadResult> {
  return autocannonRun(target, seconds, Math.max(1, Math.round(rate)));
}

/** One keep-alive TLS connection carrying one review at a time, with just enough HTTP to find each answer's end. */
const EMPTY = Buffer.alloc(0);

class Connection {
  private pending: Buffer = EMPTY;
  /** Body bytes still to come, or -1 while the head is being read. */
  private remaining = -1;
  private ok = false;
  private due = 0;
  private done: ((ok: boolean, due: number) => void) | undefined;

  private constructor(private readonly socket: TLSSocket) {
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => this.fail());
    socket.on('close', () => this.fail());
  }

  static open(target: LoadTarget): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: target.port, ca: target.ca, servername: 'localhost' });
      socket.once('secureConnect', () => resolve(new Connection(socket)));
      socket.once('error', reject);
    });
  }

  send(message: Buffer, due: number, done: (ok: boolean, due: number) => void): void {
    this.due = due;
    this.done = done;
    this.socket.write(message);
  }

  close(): void {
    this.socket.destroy();
  }

  private read(chunk: Buffer): void {
    if (this.remaining < 0) {
      // Only the head is kept; the body is counted, not copied, so the sender allocates little per answer.
      this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
      const headEnd = this.pending.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = this.pending.toString('latin1', 0, headEnd);
      // Every answer here has a Content-Length (Fastify sets it for the string and object bodies these servers
      // send); one without it would be a change in the servers this client must not silently mismeasure.
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1];
      if (length === undefined) {
        this.fail();
        return;
      }
      this.ok = /^HTTP\/1\.1 2\d\d /.test(head);
      this.remaining = Number(length) - (this.pending.length - headEnd - 4);
      this.pending = EMPTY;
    } else {
      this.remaining -= chunk.length;
    }
    if (this.remaining > 0) return;
    this.remaining = -1;
    this.finish(this.ok);
  }

  private fail(): void {
    if (this.done !== undefined) this.finish(false);
    this.socket.destroy();
  }

  private finish(ok: boolean): void {
    const done = this.done;
    this.done = undefined;
    done?.(ok, this.due);
  }
}

/**
 * Open loop at a steady rate: review i is due at i/rate seconds, and its latency counts from then, so a server
 * that falls behind is charged for the queue it builds instead of silently slowing the sender down.
 * `connections` keep-alive connections, as a pool in kube-apiserver would hold; a review that finds them all
 * busy waits for one, and that wait is part of its latency. The client is raw TLS with prebuilt requests, as
 * lean as autocannon's: node:https cost so much CPU per request that, on two cores, the sender slowed the
 * servers it measured.
 */
export async function steady(target: LoadTarget, rate: number, seconds: number): Promise<LoadResult> {
  const body = Buffer.from(target.body);
  const message = Buffer.concat([
    Buffer.from(
      `POST /mutate HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
    ),
    body,
  ]);
  const connections = await Promise.all(Array.from({ length: target.connections }, () => Connection.open(target)));
  const idle = [...connections];
  const queue: number[] = [];
  let next = 0;
  const samples: number[] = [];
  const lags: number[] = [];
  let errors = 0;
  let answered = 0;
  let alive = connections.length;

  const dispatch = (): void => {
    while (next < queue.length && idle.length > 0) {
      const connection = idle.pop();
      const due = queue[next];
      next += 1;
      if (connection === undefined || due === undefined) break;
      connection.send(message, due, (ok, when) => {
        answered += 1;
        if (ok) {
          samples.push(performance.now() - when);
          idle.push(connection);
        } else {
          // A connection that failed once is not trusted with another review.
          errors += 1;
          alive -= 1;
        }
        dispatch();
      });
    }
  };

  const total = Math.max(1, Math.round(rate * seconds));
  const start = performance.now();
  while (queue.length < total) {
    const now = performance.now();
    const due = Math.min(total, Math.floor(((now - start) * rate) / 1000) + 1);
    while (queue.length < due) {
      const at = start + (queue.length * 1000) / rate;
      lags.push(now - at);
      queue.push(at);
    }
    dispatch();
    // A timer, not a busy loop: the sender shares two cores with the server it measures.
    if (queue.length < total) await sleep(Math.max(0, start + (queue.length * 1000) / rate - performance.now()));
  }
  const deadline = performance.now() + 15_000;
  while (answered < total && alive > 0 && performance.now() < deadline) await sleep(10);
  for (const connection of connections) connection.close();
  return {
    admissionsPerSecond: samples.length / seconds,
    answered: samples.length,
    errors: errors + (total - answered),
    latency: latencyOf(samples),
    senderLagP99: latencyOf(lags).p99,
  };
}
