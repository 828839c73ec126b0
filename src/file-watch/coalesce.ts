/**
 * One run at a time for a reload driven by change events. A call while a run is in progress queues one
 * follow-up run, and every call until that follow-up starts shares it: a burst of events costs at most
 * the run in progress and one more, and the last event is always followed by a complete run.
 *
 * A run that fails (rejects, or throws) fails only its own callers: the next call starts afresh.
 *
 * The heart of reload-on-change.ts, which the certificate reloader and the config file watch share.
 */
export interface Coalesced<T> {
  /** Starts a run, or joins the follow-up already queued. */
  run(): Promise<T>;
  /** Settles once the run in progress and the queued follow-up, if any, are done. */
  idle(): Promise<void>;
}

export function coalesced<T>(task: () => Promise<T>): Coalesced<T> {
  let running: Promise<T> | undefined;
  let queued: Promise<T> | undefined;

  const start = (): Promise<T> => {
    // new Promise turns a synchronous throw into this run's rejection instead of the caller's exception.
    const run = new Promise<T>((resolve) => resolve(task())).finally(() => {
      running = undefined;
    });
    running = run;
    return run;
  };
  const startQueued = (): Promise<T> => {
    queued = undefined;
    return start();
  };

  return {
    run() {
      if (queued !== undefined) return queued;
      if (running === undefined) return start();
      // The follow-up starts however the run in progress ends: its failure is not the follow-up's.
      const followUp = running.then(startQueued, startQueued);
      queued = followUp;
      return followUp;
    },
    async idle() {
      await (queued ?? running)?.catch(() => undefined);
    },
  };
}
