/**
 * How `serve` stops. SIGTERM (the kubelet) or SIGINT (a terminal) starts the shutdown: /readyz turns 503
 * at once, then after `--shutdown-delay` (time for endpoints to drop the pod) the listener closes
 * and the admissions in flight are drained. A second signal cuts the delay and the drain short; the same signal
 * again within REPEATED_SIGNAL_MS is not a second one (see there).
 *
 * The process, the server and the clock are passed in, so a test drives a shutdown with an EventEmitter for
 * the signals, a fake server and a clock it moves by hand.
 */
import type { Server } from 'node:https';
import { repeatOn, sleepOn, type Clock } from '../../time/clock.js';
import type { Logger } from '../../logging/logger.js';

export interface Stop {
  signal: NodeJS.Signals;
}

/** Where the signals come from; `process` satisfies it. */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface StopSignals {
  /** The first SIGTERM or SIGINT: start the shutdown. */
  readonly first: Promise<Stop>;
  /** The one after it: stop waiting. */
  readonly second: Promise<Stop>;
  /**
   * Once no echo of the last signal can still come (REPEATED_SIGNAL_MS after it), hands the signals back to
   * their default action, which ends the process. Handing them back at once would let npm's late echo of a
   * Ctrl-C kill a server that has already drained, before its last log lines are written and with the wrong
   * exit status.
   */
  remove(): Promise<void>;
}

const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/**
 * One stop request often arrives twice: Ctrl-C sends SIGINT to every process of the terminal's foreground group,
 * so under `npm start` the server gets it from the terminal and again from npm, which forwards SIGINT and
 * SIGTERM to its script. The same signal again within this long is that echo, not a person asking to cut the
 * drain short; a different signal, or the same one later, is.
 */
export const REPEATED_SIGNAL_MS = 1000;

/** Listens from the start, so a signal that arrives while the server is still starting is not lost. */
export function listenForStopSignals(source: SignalSource, clock: Clock): StopSignals {
  const resolvers: ((stop: Stop) => void)[] = [];
  const first = new Promise<Stop>((resolve) => resolvers.push(resolve));
  const second = new Promise<Stop>((resolve) => resolvers.push(resolve));
  let received = 0;
  let last: { signal: NodeJS.Signals; at: number } | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    const at = clock.monotonic();
    if (last !== undefined && last.signal === signal && at - last.at < REPEATED_SIGNAL_MS) return;
    last = { signal, at };
    resolvers[received]?.({ signal });
    received += 1;
  };
  for (const signal of STOP_SIGNALS) source.on(signal, onSignal);
  return {
    first,
    second,
    remove: async () => {
      const left = last === undefined ? 0 : last.at + REPEATED_SIGNAL_MS - clock.monotonic();
      // Kept alive: with everything closed, this wait is all that stands between the process and its exit.
      if (left > 0) await new Promise<void>((resolve) => clock.setTimer(resolve, left, { keepAlive: true }));
      for (const signal of STOP_SIGNALS) source.off(signal, onSignal);
    },
  };
}

/** The webhook server, as the drain needs it. */
export interface DrainTarget {
  /** Stops accepting and resolves once every admission in flight has been answered (Fastify's close). */
  close(): Promise<void>;
  /** The node server under it, whose connections the drain closes. */
  connections: Pick<Server, 'closeIdleConnections' | 'closeAllConnections'>;
}

export interface ShutdownDeps {
  signals: StopSignals;
  server: DrainTarget;
  /** Called at the first signal: from then on /readyz says 503 and every answer says `Connection: close`. */
  startDraining(): void;
  /** Between the first signal and closing the listener. */
  delayMs: number;
  /** The longest the drain waits for admissions in flight before it cuts their connections. */
  timeoutMs: number;
  logger: Pick<Logger, 'info' | 'warn'>;
  clock: Clock;
}

/**
 * While draining, idle connections not used since the drain began are closed this often (see Connections
 * in server/connections.ts): one whose answer was already on its way at SIGTERM lacks `Connection: close`.
 */
export const IDLE_SWEEP_MS = 100;

/** Waits for the first stop signal, then shuts down; resolves with the exit status (1: connections were cut). */
export async function shutDownOnSignal(deps: ShutdownDeps): Promise<number> {
  const { signals, logger } = deps;
  const stop = await signals.first;
  logger.info({ signal: stop.signal }, 'shutting down: draining in-flight admissions');
  deps.startDraining();
  if (deps.delayMs > 0) await sleepUnless(deps.clock, deps.delayMs, signals.second);
  const forced = await drain(deps.server, deps.timeoutMs, signals.second, logger, deps.clock);
  logger.info({ forced }, 'stopped');
  return forced ? 1 : 0;
}

/**
 * Stops accepting, lets every admission in flight finish, and returns whether connections had to be cut
 * (the timeout passed, or a second signal asked for it). A connection used since SIGTERM closes after the
 * answer that told it `Connection: close`; the rest are closed while idle, so a keep-alive client cannot
 * hold the process open.
 */
export async function drain(
  server: DrainTarget,
  timeoutMs: number,
  secondSignal: Promise<Stop>,
  logger: Pick<Logger, 'warn'>,
  clock: Clock,
): Promise<boolean> {
  let forced = false;
  const force = (why: string): void => {
    if (forced) return;
    forced = true;
    logger.warn({ why }, 'closing connections with admissions still in flight');
    server.connections.closeAllConnections();
  };
  const stopSweeping = repeatOn(clock, IDLE_SWEEP_MS, () => server.connections.closeIdleConnections());
  const cancelTimeout = clock.setTimer(() => force(`shutdown timeout of ${timeoutMs} ms passed`), timeoutMs);
  void secondSignal.then((stop) => force(`second ${stop.signal}`));
  try {
    await server.close();
  } finally {
    stopSweeping();
    cancelTimeout();
  }
  return forced;
}

/** Waits `ms`, or less when `cut` settles first; the timer is cancelled either way, so it holds nothing open. */
async function sleepUnless(clock: Clock, ms: number, cut: Promise<unknown>): Promise<void> {
  const cutShort = new AbortController();
  void cut.then(() => cutShort.abort());
  await sleepOn(clock, ms, cutShort.signal);
}
