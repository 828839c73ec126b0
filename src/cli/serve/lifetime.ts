/**
 * Everything a running `serve` must close, owned in one place (Fastify's `onClose`, for the whole process).
 * Each part registers how to close what it started as soon as it has started it, so a start-up that fails
 * halfway still closes everything started before the failure.
 */
export type Closer = () => Promise<void> | void;

export class Lifetime {
  /** Undefined once close() has begun. */
  private closers: (() => Promise<void>)[] | undefined = [];
  private closing: Promise<void> | undefined;

  /**
   * Registers how to close something just started; it is closed before everything registered earlier.
   * Returns a function that closes it now, for a part whose owner ends it early (the drain closes the
   * app): either way it is closed once.
   */
  onClose(closer: Closer): () => Promise<void> {
    // Whatever registers this late was started after the end began, and nothing would ever close it.
    if (this.closers === undefined) throw new Error('onClose() after close(): nothing would close it');
    let closed: Promise<void> | undefined;
    // new Promise turns a closer's synchronous throw into its rejection, like an async closer's.
    const closeOnce = (): Promise<void> => (closed ??= new Promise<void>((resolve) => resolve(closer())));
    this.closers.push(closeOnce);
    return closeOnce;
  }

  /**
   * Closes everything, the last registered first; later calls share the first call's promise. A closer
   * that fails does not keep the others from closing: every one runs, then close() rejects with the
   * failure (an AggregateError when several failed).
   */
  close(): Promise<void> {
    if (this.closing === undefined) {
      const closers = this.closers ?? [];
      this.closers = undefined;
      this.closing = closeInReverse(closers);
    }
    return this.closing;
  }
}

async function closeInReverse(closers: readonly (() => Promise<void>)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const close of [...closers].reverse()) {
    try {
      await close();
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} parts failed to close`);
}
