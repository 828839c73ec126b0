/**
 * Every open connection of the webhook port: for the connection cap, for taking bytes back from stalled
 * bodies, and for a drain that drops nothing (`closeUnusedSinceDrain`, `answersWrittenOut`).
 *
 * A cap that refuses new connections lets a few hundred clients that send nothing (a handshake or a
 * request that never ends) shut kube-apiserver out until their timeouts run. kube-apiserver's own
 * connections are either idle between requests or in a request that arrives within milliseconds, so at
 * the cap the server closes the connection that has been arriving the longest, and when request bodies in
 * flight fill the byte budget, the bodies arriving longer than a grace no healthy client needs. See
 * `victimForNewConnection` for the order; the new connection is refused only when nobody can make room.
 */
import type { Server } from 'node:https';
import type { Socket } from 'node:net';
import type { Clock } from '../time/clock.js';
import type { Reservation } from './byte-budget.js';

/**
 * arriving: accepted, in the TLS handshake, or with a request whose headers or body have not all come;
 * handling: a whole request being answered; idle: kept alive between requests.
 */
type Phase = 'arriving' | 'handling' | 'idle';

interface Connection {
  /** The TCP socket, which is what the cap counts. */
  readonly tcp: Socket;
  /** The TLS socket on top, once the handshake is done: requests arrive on it. */
  tls: Socket | undefined;
  phase: Phase;
  /** When the phase began (ms, the monotonic clock given). */
  since: number;
  /** Requests received and not yet answered (more than one only when a client pipelines). */
  active: number;
  /** Accepted, or sent a request, after the drain began: it gets an answer saying `Connection: close`. */
  usedWhileDraining: boolean;
  /** Bytes its requests hold against the byte budget, handed back when the connection is evicted. */
  readonly reservations: Set<Reservation>;
  /** Its requests received and not answered yet (of `reservations`, the ones whose answer has not been sent). */
  readonly unanswered: Set<Reservation>;
}

export interface ConnectionsOptions {
  maxConnections: number;
  /** How long a connection may be arriving before the cap or the byte budget may close it for others. */
  slowClientGraceMs: number;
  draining: () => boolean;
  onCount: (open: number) => void;
  /** A connection closed to make room (`evicted`), or a new one refused for want of one. */
  onRefused: (reason: 'connection_limit' | 'evicted') => void;
  /** Phases are timed on its monotonic clock. */
  clock: Clock;
}

/** What the server's 'connection' and 'secureConnection' events both know of a connection. */
function peerKey(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;
}

export class Connections {
  readonly #byTcp = new Map<Socket, Connection>();
  readonly #byPeer = new Map<string, Connection>();
  readonly #byTls = new WeakMap<Socket, Connection>();
  /** Requests whose answer is being written out: sent by the route, its last byte not yet gone. */
  readonly #leaving = new Set<Reservation>();
  #writtenOut: (() => void)[] = [];

  constructor(
    server: Server,
    private readonly options: ConnectionsOptions,
  ) {
    server.on('connection', (tcp: Socket) => this.accept(tcp));
    server.on('secureConnection', (tls: Socket) => {
      const connection = this.#byPeer.get(peerKey(tls));
      if (connection === undefined || connection.tls !== undefined) return;
      connection.tls = tls;
      this.#byTls.set(tls, connection);
    });
  }

  get size(): number {
    return this.#byTcp.size;
  }

  requestStarted(socket: Socket, reservation: Reservation): void {
    const connection = this.#byTls.get(socket);
    if (connection === undefined) return;
    connection.active += 1;
    connection.reservations.add(reservation);
    connection.unanswered.add(reservation);
    if (connection.phase === 'idle') this.enter(connection, 'arriving');
    if (this.options.draining()) connection.usedWhileDraining = true;
  }

  /** The request's body has all arrived and it is being answered. */
  requestReceived(socket: Socket): void {
    const connection = this.#byTls.get(socket);
    if (connection !== undefined && connection.phase === 'arriving') this.enter(connection, 'handling');
  }

  /** The request's answer is on its way: a next request on the connection no longer waits behind it. */
  requestAnswered(socket: Socket, reservation: Reservation): void {
    if (this.#byTls.get(socket)?.unanswered.delete(reservation) === true) this.#leaving.add(reservation);
  }

  /**
   * True while a request on this socket's connection waits for its answer: a request arriving now was sent
   * without the answer before it, which kube-apiserver never does (Go's HTTP client does not pipeline).
   */
  awaitingAnswer(socket: Socket): boolean {
    return (this.#byTls.get(socket)?.unanswered.size ?? 0) > 0;
  }

  requestEnded(socket: Socket, reservation: Reservation): void {
    const connection = this.#byTls.get(socket);
    if (connection === undefined) return;
    connection.reservations.delete(reservation);
    connection.unanswered.delete(reservation);
    this.left(reservation);
    if (connection.active > 0) connection.active -= 1;
    if (connection.active === 0) this.enter(connection, 'idle');
  }

  /**
   * Resolves once no answer is being written out. Node's `server.close()` destroys every connection it finds
   * between two requests, and to Node a connection whose answer has been handed to the socket but not yet sent
   * is one: the rest of that answer would be lost. So the listener closes at a moment when none is leaving.
   */
  answersWrittenOut(): Promise<void> {
    if (this.#leaving.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#writtenOut.push(resolve));
  }

  /**
   * The drain's sweep. It closes a connection only when it is idle and has not been used since the drain
   * began: a connection used during the drain was told `Connection: close` in its answer and closes after
   * it, and one accepted during the drain is about to send its request. What is left has lain unused through
   * the whole shutdown delay. Node's own `closeIdleConnections` would also close a connection whose answer
   * is still being written out (see `answersWrittenOut`); here a connection is idle once its answer has gone.
   */
  closeUnusedSinceDrain(): void {
    for (const connection of [...this.#byTcp.values()]) {
      if (connection.tls !== undefined && connection.active === 0 && !connection.usedWhileDraining) {
        connection.tls.destroy();
      }
    }
  }

  /**
   * Closes connections whose requests have been arriving past the grace, longest first, until `bytes`
   * are handed back to the budget or none is left. Returns the bytes handed back.
   */
  evictStalledHolders(bytes: number): number {
    let freed = 0;
    const cutoff = this.options.clock.monotonic() - this.options.slowClientGraceMs;
    const stalled = [...this.#byTcp.values()]
      .filter((c) => c.phase === 'arriving' && c.since <= cutoff && heldBy(c) > 0)
      .sort((a, b) => a.since - b.since);
    for (const connection of stalled) {
      if (freed >= bytes) break;
      freed += heldBy(connection);
      this.evict(connection);
    }
    return freed;
  }

  private accept(tcp: Socket): void {
    if (this.#byTcp.size >= this.options.maxConnections) {
      const victim = this.victimForNewConnection();
      if (victim === undefined) {
        this.options.onRefused('connection_limit');
        tcp.destroy();
        return;
      }
      this.evict(victim);
    }
    const connection: Connection = {
      tcp,
      tls: undefined,
      phase: 'arriving',
      since: this.options.clock.monotonic(),
      active: 0,
      usedWhileDraining: this.options.draining(),
      reservations: new Set(),
      unanswered: new Set(),
    };
    const key = peerKey(tcp);
    this.#byTcp.set(tcp, connection);
    this.#byPeer.set(key, connection);
    this.options.onCount(this.#byTcp.size);
    tcp.once('close', () => this.forget(connection, key));
  }

  /**
   * Who makes room for a new connection: one arriving past the grace (the longest), else one idle past the
   * grace (the longest: Go reuses its most recently used connection first), else any arriving one (the
   * longest, which a flood of new connections reaches only after every connection accepted before it).
   * A connection being answered, or idle within the grace (about to carry the client's next request), never.
   */
  private victimForNewConnection(): Connection | undefined {
    const cutoff = this.options.clock.monotonic() - this.options.slowClientGraceMs;
    let slow: Connection | undefined;
    let idle: Connection | undefined;
    let arriving: Connection | undefined;
    for (const connection of this.#byTcp.values()) {
      if (connection.phase === 'arriving') {
        if (arriving === undefined || connection.since < arriving.since) arriving = connection;
        if (connection.since <= cutoff && (slow === undefined || connection.since < slow.since)) slow = connection;
      } else if (connection.phase === 'idle' && connection.since <= cutoff) {
        if (idle === undefined || connection.since < idle.since) idle = connection;
      }
    }
    return slow ?? idle ?? arriving;
  }

  private evict(connection: Connection): void {
    this.options.onRefused('evicted');
    for (const reservation of connection.reservations) reservation.release();
    connection.reservations.clear();
    connection.unanswered.clear();
    // Counted free now, not when the socket's 'close' event comes round.
    this.forget(connection, peerKey(connection.tcp));
    (connection.tls ?? connection.tcp).destroy();
    connection.tcp.destroy();
  }

  private forget(connection: Connection, key: string): void {
    if (this.#byTcp.get(connection.tcp) !== connection) return;
    this.#byTcp.delete(connection.tcp);
    if (this.#byPeer.get(key) === connection) this.#byPeer.delete(key);
    this.options.onCount(this.#byTcp.size);
  }

  private enter(connection: Connection, phase: Phase): void {
    connection.phase = phase;
    connection.since = this.options.clock.monotonic();
  }

  private left(reservation: Reservation): void {
    if (!this.#leaving.delete(reservation) || this.#leaving.size > 0) return;
    const waiting = this.#writtenOut;
    this.#writtenOut = [];
    for (const resolve of waiting) resolve();
  }
}

function heldBy(connection: Connection): number {
  let held = 0;
  for (const reservation of connection.reservations) held += reservation.held;
  return held;
}
