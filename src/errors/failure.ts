/** The failure's shape, and the one way to define a kind of failure (src/errors.ts explains the kinds). */
export type FailureKind = 'denial' | 'http' | 'startup';

export interface Failure {
  code: string;
  status: number;
  message: string;
}

export interface FailureSpec<A extends unknown[]> {
  readonly code: string;
  readonly status: number;
  readonly kind: FailureKind;
  /** What the failure means, for docs/errors.md. */
  readonly meaning: string;
  (...args: A): Failure;
}

export function define<A extends unknown[]>(
  code: string,
  status: number,
  kind: FailureKind,
  meaning: string,
  message: (...args: A) => string,
): FailureSpec<A> {
  const make = (...args: A): Failure => ({ code, status, message: message(...args) });
  return Object.assign(make, { code, status, kind, meaning });
}
