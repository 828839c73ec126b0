/**
 * Events go out a few at a time, behind the deliveries: each is an API call (and, with client-node, a TLS
 * handshake of its own), and 200 claims at once would otherwise spend the CPU a delivery needs on recording the
 * deliveries before them. The queue is bounded: past `limit` waiting, the oldest is dropped and counted.
 */
export interface EventQueue {
  push(send: () => Promise<void>): void;
  /** Resolves once nothing waits or is in flight. */
  drained(): Promise<void>;
}

export function eventQueue(options: {
  concurrency: number;
  limit: number;
  onDropped: () => void;
  onError: (error: unknown) => void;
}): EventQueue {
  const waiting: (() => Promise<void>)[] = [];
  let active = 0;
  let drainWaiters: (() => void)[] = [];
  const next = (): void => {
    while (active < options.concurrency && waiting.length > 0) {
      const send = waiting.shift() as () => Promise<void>;
      active += 1;
      send()
        .catch(options.onError)
        .finally(() => {
          active -= 1;
          next();
        });
    }
    if (active === 0 && waiting.length === 0) {
      for (const done of drainWaiters) done();
      drainWaiters = [];
    }
  };
  return {
    push(send) {
      waiting.push(send);
      if (waiting.length > options.limit) {
        waiting.shift();
        options.onDropped();
      }
      next();
    },
    drained() {
      if (active === 0 && waiting.length === 0) return Promise.resolve();
      return new Promise((resolve) => drainWaiters.push(resolve));
    },
  };
}
