/**
 * What keeps clients other than kube-apiserver from taking the webhook's memory, connections or time.
 * kube-apiserver sends at most a few MiB, gives up after the webhook's timeoutSeconds (at most 30 s), reads
 * every answer before it sends the next request on a connection, and keeps idle connections for 90 s. Each
 * limit below is set from that contract (docs/server.md has the table and the memory sums), so
 * kube-apiserver never meets one while a client that breaks the contract is cut off.
 *
 * This module holds the limits and the timeouts derived from them; transport-guard.ts enforces them, with the
 * byte budget (byte-budget.ts), the connection table (connections.ts) and the parser's failures (client-errors.ts).
 */

export interface TransportLimits {
  /**
   * The TLS handshake, and a request's headers and body, must arrive within this; and a connection with a
   * request or an answer under way may go this long without a byte moving either way.
   */
  requestTimeoutMs: number;
  /** A kept-alive connection with nothing to do is closed after this long. */
  idleTimeoutMs: number;
  /**
   * At this many connections, a new one makes room by closing another (connections.ts says which); when
   * none may go, the new one is closed as soon as it is accepted.
   */
  maxConnections: number;
  /**
   * How long a connection may be arriving (TLS handshake, headers, body) before the connection cap or the
   * byte budget may close it to serve another. kube-apiserver's requests arrive within milliseconds.
   */
  slowClientGraceMs: number;
  /** The largest request body read; larger is 413. */
  maxBodyBytes: number;
  /** Request bodies being received plus answers not yet written out, across all connections; past it, 503. */
  maxInflightBytes: number;
  /** Unsent answer bytes a connection may still hold when its next request arrives; past it, it is closed. */
  maxUnreadBytes: number;
}

const MIB = 1024 * 1024;

export const DEFAULT_TRANSPORT_LIMITS: Readonly<TransportLimits> = Object.freeze({
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 120_000,
  maxConnections: 256,
  slowClientGraceMs: 1000,
  maxBodyBytes: 4 * MIB,
  maxInflightBytes: 16 * MIB,
  maxUnreadBytes: 64 * 1024,
});

/** Seconds a client should wait before sending again after a 503; kube-apiserver's client honours it. */
export const RETRY_AFTER_SECONDS = 1;

/** How often Node checks connections against the request timeout: a small share of it, at most a second. */
export function connectionsCheckingIntervalMs(limits: TransportLimits): number {
  return Math.max(10, Math.min(1000, Math.floor(limits.requestTimeoutMs / 10)));
}

/** Two checks after the request timeout: Node's check (above) finds a stalled request first. */
export function inactivityTimeoutMs(limits: TransportLimits): number {
  return limits.requestTimeoutMs + 2 * connectionsCheckingIntervalMs(limits);
}
