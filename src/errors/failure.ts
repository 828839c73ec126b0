/**
 * The failure's shape, the error a row throws, and the one way to define a row (index.ts explains the kinds).
 * A row is Fastify's `createError` turned into data as well: called, it gives the failure as a value (a denial
 * or an HTTP answer is sent, not thrown); its `Error` is the class to throw, so a caller tells this failure
 * from any other by `instanceof` or by `code`, and no error class elsewhere holds a code of its own.
 */
export type FailureKind = 'denial' | 'http' | 'startup' | 'delivery';

/** `status` is undefined for the rows that have none (deliver-env's failures are Events, not answers). */
export type FailureStatus = number | undefined;

export interface Failure<S extends FailureStatus = number> {
  code: string;
  status: S;
  message: string;
}

/** A thrown failure of one row: its `code` and `status` are the row's, its message the row's template filled. */
export class CatalogueError<S extends FailureStatus = FailureStatus> extends Error implements Failure<S> {
  readonly code: string;
  readonly status: S;

  constructor({ code, status, message }: Failure<S>) {
    super(message);
    // A row's class is named after its code, a subclass after itself: a stack trace says which failure it is.
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

export interface FailureSpec<A extends unknown[], S extends FailureStatus = number> {
  readonly code: string;
  readonly status: S;
  readonly kind: FailureKind;
  /** What the failure means, for docs/errors.md. */
  readonly meaning: string;
  (...args: A): Failure<S>;
  /** `new row.Error(...args)` throws the failure that `row(...args)` describes. */
  readonly Error: new (...args: A) => CatalogueError<S>;
}

export function define<A extends unknown[], S extends FailureStatus>(
  code: string,
  status: S,
  kind: FailureKind,
  meaning: string,
  message: (...args: A) => string,
): FailureSpec<A, S> {
  const make = (...args: A): Failure<S> => ({ code, status, message: message(...args) });
  const RowError = class extends CatalogueError<S> {
    constructor(...args: A) {
      super(make(...args));
    }
  };
  // The row's code as its name: in a stack trace, and in a log line's `err.type` (pino reads the class's name).
  Object.defineProperty(RowError, 'name', { value: code });
  return Object.assign(make, { code, status, kind, meaning, Error: RowError });
}
