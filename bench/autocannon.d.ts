/** The slice of autocannon's API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
  }
  interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    /** Requests per second over all connections, as a budget each connection spends at the start of each second. */
    overallRate?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    tlsOptions?: { ca?: string | Buffer };
    servername?: string;
  }
  interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    duration: number;
  }
  /** A running load: its events, and the result once it ends. */
  interface Instance extends EventEmitter, PromiseLike<Result> {
    /** responseTime in fractional milliseconds, from the request's write to the response's last byte. */
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, bytes: number, responseTime: number) => void,
    ): this;
  }
  function autocannon(options: Options): Instance;
  export default autocannon;
}
