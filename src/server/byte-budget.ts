/**
 * The byte budget: request bodies being received plus answers not yet written out, across all connections, held
 * under `maxInflightBytes`. A request that does not fit is refused with 503 and Retry-After.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { HTTP_ERRORS } from '../errors/index.js';
import { httpFailure, type HttpFailure } from './http-failure.js';
import { RETRY_AFTER_SECONDS } from './transport.js';

/** A request over this fraction of the budget is a large one (2 MiB of the default 16 MiB). */
const LARGE_SHARE = 8;

/**
 * Bytes held against `maxInflightBytes`, shared by every request. When a request does not fit, `reclaim`
 * is asked to hand bytes back (by closing connections whose bodies have stalled past the grace) before it is
 * refused.
 *
 * Room is kept for small requests. A stalled body is only told from a slow one after the grace, and within it a
 * few clients that send large bodies quickly and then stop (four at the default body limit) would fill the
 * whole budget and have kube-apiserver's ordinary reviews refused until then. So the requests over a
 * `LARGE_SHARE`th of the budget together hold at most `largeLimit` (three quarters of it, and never less than
 * one whole body), and the rest stays free for the reviews kube-apiserver mostly sends, a few KiB each.
 */
export class ByteBudget {
  #used = 0;
  #usedByLarge = 0;
  /** A request holding more than this is a large one. */
  readonly largeBytes: number;
  readonly largeLimit: number;

  constructor(
    readonly limit: number,
    maxBodyBytes: number,
    private readonly onChange: (used: number) => void,
    private readonly reclaim: (bytes: number) => void = () => undefined,
  ) {
    this.largeBytes = Math.floor(limit / LARGE_SHARE);
    this.largeLimit = Math.min(limit, Math.max(maxBodyBytes, limit - Math.floor(limit / 4)));
  }

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes`, of which `largeBytes` count against the large requests' share, if both fit. */
  tryTake(bytes: number, largeBytes = 0): boolean {
    const over = (): number =>
      Math.max(this.#used + bytes - this.limit, this.#usedByLarge + largeBytes - this.largeLimit);
    if (over() > 0) this.reclaim(over());
    if (over() > 0) return false;
    this.#usedByLarge += largeBytes;
    this.change(bytes);
    return true;
  }

  /** Takes `bytes` whatever the limit: an answer already computed is sent, and the next request waits. */
  force(bytes: number): void {
    this.change(bytes);
  }

  give(bytes: number, largeBytes = 0): void {
    this.#usedByLarge -= largeBytes;
    this.change(-bytes);
  }

  private change(bytes: number): void {
    if (bytes === 0) return;
    this.#used += bytes;
    this.onChange(this.#used);
  }
}

/** One request's share of the budget: its body as it arrives, then its answer until written out. */
export class Reservation {
  #held = 0;
  /** What of `#held` counts against the large requests' share: all of it, once it is over `largeBytes`. */
  #heldAsLarge = 0;
  #released = false;

  constructor(private readonly budget: ByteBudget) {}

  /** The 503 for a request that does not fit, with the budget as it stands. */
  busy(): HttpFailure {
    return httpFailure(this.busyError());
  }

  /** The same 503, as the error a body's stream fails with. */
  busyError(): BusyError {
    return new BusyError(this.budget.used, this.budget.limit, RETRY_AFTER_SECONDS);
  }

  get held(): number {
    return this.#held;
  }

  take(bytes: number): boolean {
    if (this.#released) return true;
    const held = this.#held + bytes;
    const asLarge = held > this.budget.largeBytes ? held : 0;
    if (!this.budget.tryTake(bytes, asLarge - this.#heldAsLarge)) return false;
    this.#held = held;
    this.#heldAsLarge = asLarge;
    return true;
  }

  /** At least `bytes` held from now on (the answer replaces the body, which is garbage by then). */
  growTo(bytes: number): void {
    if (this.#released || bytes <= this.#held) return;
    this.budget.force(bytes - this.#held);
    this.#held = bytes;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.budget.give(this.#held, this.#heldAsLarge);
    this.#held = 0;
    this.#heldAsLarge = 0;
  }
}

/** A body over the budget found while streaming it (chunked, no content-length to check up front). */
export class BusyError extends HTTP_ERRORS.busy.Error {
  /** Fastify's body reader reads the status here, and puts 400 on an error without one. */
  readonly statusCode = this.status;
  readonly failure: HttpFailure = httpFailure(this);
}

/** Counts a body without a content-length against the reservation as it streams in. */
export function countingStream(reservation: Reservation): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      if (reservation.take(chunk.length)) callback(null, chunk);
      else callback(reservation.busyError());
    },
  });
}
