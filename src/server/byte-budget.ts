/**
 * The byte budget: request bodies being received plus answers not yet written out, across all connections, held
 * under `maxInflightBytes`. A request that does not fit is refused with 503 and Retry-After.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { HTTP_ERRORS } from '../errors.js';
import { httpFailure, type HttpFailure } from './http-errors.js';
import { RETRY_AFTER_SECONDS } from './transport.js';

/**
 * Bytes held against `maxInflightBytes`, shared by every request. When a request does not fit, `reclaim`
 * is asked to hand bytes back (by closing connections whose bodies have stalled) before it is refused.
 */
export class ByteBudget {
  #used = 0;

  constructor(
    readonly limit: number,
    private readonly onChange: (used: number) => void,
    private readonly reclaim: (bytes: number) => void = () => undefined,
  ) {}

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit under the limit. */
  tryTake(bytes: number): boolean {
    if (this.#used + bytes > this.limit) this.reclaim(this.#used + bytes - this.limit);
    if (this.#used + bytes > this.limit) return false;
    this.change(bytes);
    return true;
  }

  /** Takes `bytes` whatever the limit: an answer already computed is sent, and the next request waits. */
  force(bytes: number): void {
    this.change(bytes);
  }

  give(bytes: number): void {
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
  #released = false;

  constructor(private readonly budget: ByteBudget) {}

  /** The 503 for a request that does not fit, with the budget as it stands. */
  busy(): HttpFailure {
    return httpFailure(HTTP_ERRORS.busy(this.budget.used, this.budget.limit, RETRY_AFTER_SECONDS));
  }

  get held(): number {
    return this.#held;
  }

  take(bytes: number): boolean {
    if (this.#released) return true;
    if (!this.budget.tryTake(bytes)) return false;
    this.#held += bytes;
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
    this.budget.give(this.#held);
    this.#held = 0;
  }
}

/** A body over the budget found while streaming it (chunked, no content-length to check up front). */
export class BusyError extends Error {
  override readonly name = 'BusyError';
  readonly statusCode = HTTP_ERRORS.busy.status;
  readonly code = HTTP_ERRORS.busy.code;

  constructor(readonly failure: HttpFailure) {
    super('request bodies in flight are over the budget');
  }
}

/** Counts a body without a content-length against the reservation as it streams in. */
export function countingStream(reservation: Reservation): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      if (reservation.take(chunk.length)) callback(null, chunk);
      else callback(new BusyError(reservation.busy()));
    },
  });
}
