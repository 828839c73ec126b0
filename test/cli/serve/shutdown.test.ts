/**
 * The shutdown sequence (src/cli/serve/shutdown.ts) driven by hand: signals from an EventEmitter, a fake
 * server whose close() the test settles, and a clock the test moves. test/server/shutdown.test.ts runs the
 * same sequence against the built server with real signals and sockets.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  IDLE_SWEEP_MS,
  REPEATED_SIGNAL_MS,
  drain,
  listenForStopSignals,
  shutDownOnSignal,
  type DrainTarget,
  type StopSignals,
} from '../../../src/cli/serve/shutdown.js';
import { recordingLogger } from '../../server/support/server.js';
import { ManualClock } from '../../support/manual-clock.js';

/** A server whose close() settles when the test says the last admission in flight was answered. */
function fakeServer(): DrainTarget & { answered(): void; idleSweeps: number; cutAll: number; closeCalls: number } {
  let answered: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (answered = resolve));
  const server = {
    idleSweeps: 0,
    cutAll: 0,
    closeCalls: 0,
    answered: () => answered(),
    close: () => {
      server.closeCalls += 1;
      return closed;
    },
    connections: {
      closeIdleConnections: () => void (server.idleSweeps += 1),
      closeAllConnections: () => void (server.cutAll += 1),
    },
  };
  return server;
}

/** Stop signals the test sends, timed on `clock`. */
function scriptedSignals(clock: ManualClock): StopSignals & { send(signal: NodeJS.Signals): void } {
  const emitter = new EventEmitter();
  const signals = listenForStopSignals(emitter, clock);
  return { ...signals, send: (signal) => void emitter.emit(signal, signal) };
}

/** Lets every settled promise run its callbacks: the code here waits on nothing but promises and the clock. */
async function settle(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
}

describe('listenForStopSignals', () => {
  it('resolves first and second with the signals, in order, SIGTERM and SIGINT alike', async () => {
    const emitter = new EventEmitter();
    const signals = listenForStopSignals(emitter, new ManualClock());
    emitter.emit('SIGINT', 'SIGINT');
    emitter.emit('SIGTERM', 'SIGTERM');
    expect(await signals.first).toEqual({ signal: 'SIGINT' });
    expect(await signals.second).toEqual({ signal: 'SIGTERM' });
  });

  it('takes the same signal again within REPEATED_SIGNAL_MS as the same request (a group signal npm forwards too)', async () => {
    const clock = new ManualClock();
    const emitter = new EventEmitter();
    const signals = listenForStopSignals(emitter, clock);
    let second: string | undefined;
    void signals.second.then((stop) => (second = stop.signal));
    emitter.emit('SIGINT', 'SIGINT');
    clock.advance(REPEATED_SIGNAL_MS - 1);
    emitter.emit('SIGINT', 'SIGINT');
    await Promise.resolve();
    expect(await signals.first).toEqual({ signal: 'SIGINT' });
    expect(second).toBeUndefined();
    clock.advance(REPEATED_SIGNAL_MS);
    emitter.emit('SIGINT', 'SIGINT');
    expect(await signals.second).toEqual({ signal: 'SIGINT' });
  });

  it('takes a third signal without failing, and remove() hands the signals back once no echo can come', async () => {
    const emitter = new EventEmitter();
    const clock = new ManualClock();
    const signals = listenForStopSignals(emitter, clock);
    expect(emitter.listenerCount('SIGTERM')).toBe(1);
    expect(emitter.listenerCount('SIGINT')).toBe(1);
    for (let i = 0; i < 3; i += 1) emitter.emit('SIGTERM', 'SIGTERM');
    clock.advance(200);
    let removed = false;
    const removing = signals.remove().then(() => (removed = true));
    expect(clock.pending()).toEqual([REPEATED_SIGNAL_MS - 200]);
    // An echo of the last signal while remove() waits is still taken, not left to the default action.
    clock.advance(REPEATED_SIGNAL_MS - 201);
    await settle();
    expect(removed).toBe(false);
    expect(emitter.listenerCount('SIGTERM')).toBe(1);
    clock.advance(1);
    await removing;
    expect(emitter.listenerCount('SIGTERM')).toBe(0);
    expect(emitter.listenerCount('SIGINT')).toBe(0);
  });

  it('judges echoes on the monotonic clock: a wall clock stepped back does not hold the signals longer', async () => {
    const emitter = new EventEmitter();
    const clock = new ManualClock();
    const signals = listenForStopSignals(emitter, clock);
    emitter.emit('SIGTERM', 'SIGTERM');
    clock.stepWall(-60_000);
    clock.advance(REPEATED_SIGNAL_MS);
    await signals.remove();
    expect(clock.pending()).toEqual([]);
    expect(emitter.listenerCount('SIGTERM')).toBe(0);
  });

  it('hands the signals back at once when none came', async () => {
    const emitter = new EventEmitter();
    const clock = new ManualClock();
    const signals = listenForStopSignals(emitter, clock);
    await signals.remove();
    expect(clock.waits).toEqual([]);
    expect(emitter.listenerCount('SIGINT')).toBe(0);
  });
});

describe('drain', () => {
  it('closes idle connections on every sweep until the last admission is answered, then stops sweeping', async () => {
    const server = fakeServer();
    const logger = recordingLogger();
    const clock = new ManualClock();
    const drained = drain(server, 30_000, new Promise(() => undefined), logger, clock);
    clock.advance(IDLE_SWEEP_MS * 3);
    expect(server.idleSweeps).toBe(3);
    server.answered();
    expect(await drained).toBe(false);
    expect(clock.pending()).toEqual([]);
    expect(server.cutAll).toBe(0);
    expect(logger.lines).toEqual([]);
  });

  it('cuts every connection once the timeout passes, and says so', async () => {
    const server = fakeServer();
    const logger = recordingLogger();
    const clock = new ManualClock();
    const drained = drain(server, 5_000, new Promise(() => undefined), logger, clock);
    clock.advance(4_999);
    expect(server.cutAll).toBe(0);
    clock.advance(1);
    expect(server.cutAll).toBe(1);
    expect(logger.lines).toEqual([
      {
        level: 'warn',
        fields: { why: 'shutdown timeout of 5000 ms passed' },
        message: 'closing connections with admissions still in flight',
      },
    ]);
    server.answered();
    expect(await drained).toBe(true);
  });

  it('cuts every connection at a second signal, once, even when the timeout passes later', async () => {
    const server = fakeServer();
    const logger = recordingLogger();
    const clock = new ManualClock();
    const signals = scriptedSignals(clock);
    signals.send('SIGTERM');
    const drained = drain(server, 5_000, signals.second, logger, clock);
    signals.send('SIGINT');
    await settle();
    expect(server.cutAll).toBe(1);
    expect(logger.lines[0]?.fields).toEqual({ why: 'second SIGINT' });
    clock.advance(5_000);
    server.answered();
    expect(await drained).toBe(true);
    expect(server.cutAll).toBe(1);
  });
});

describe('shutDownOnSignal', () => {
  function start(delayMs: number) {
    const server = fakeServer();
    const logger = recordingLogger();
    const clock = new ManualClock();
    const signals = scriptedSignals(clock);
    let draining = false;
    const status = shutDownOnSignal({
      signals,
      server,
      startDraining: () => {
        draining = true;
      },
      delayMs,
      timeoutMs: 30_000,
      logger,
      clock,
    });
    return { server, logger, clock, signals, status, draining: () => draining };
  }

  it('does nothing until a stop signal', async () => {
    const { server, clock, draining } = start(0);
    clock.advance(60_000);
    await settle();
    expect(draining()).toBe(false);
    expect(server.closeCalls).toBe(0);
  });

  it('starts draining at once, closes the listener after the delay, and exits 0 once drained', async () => {
    const { server, logger, clock, signals, status, draining } = start(5_000);
    signals.send('SIGTERM');
    await settle();
    expect(draining()).toBe(true);
    expect(logger.lines[0]).toMatchObject({
      message: 'shutting down: draining in-flight admissions',
      fields: { signal: 'SIGTERM' },
    });
    clock.advance(4_999);
    await settle();
    expect(server.closeCalls).toBe(0);
    clock.advance(1);
    await settle();
    expect(server.closeCalls).toBe(1);
    server.answered();
    expect(await status).toBe(0);
    expect(logger.lines.at(-1)).toMatchObject({ message: 'stopped', fields: { forced: false } });
  });

  it('a second signal cuts the delay short and the drain with it: exit 1', async () => {
    const { server, logger, clock, signals, status } = start(60_000);
    signals.send('SIGTERM');
    await settle();
    clock.advance(REPEATED_SIGNAL_MS);
    signals.send('SIGTERM');
    await settle();
    expect(server.closeCalls).toBe(1);
    expect(server.cutAll).toBe(1);
    // Only the drain's sweep and timeout are left: the delay's timer went with the second signal.
    expect(clock.pending()).toEqual([IDLE_SWEEP_MS, 30_000]);
    server.answered();
    expect(await status).toBe(1);
    expect(clock.pending()).toEqual([]);
    expect(logger.lines.at(-1)).toMatchObject({ message: 'stopped', fields: { forced: true } });
  });

  it('a signal that came during start-up is acted on as soon as the shutdown waits for one', async () => {
    const server = fakeServer();
    const clock = new ManualClock();
    const signals = scriptedSignals(clock);
    signals.send('SIGTERM');
    const status = shutDownOnSignal({
      signals,
      server,
      startDraining: () => undefined,
      delayMs: 0,
      timeoutMs: 30_000,
      logger: recordingLogger(),
      clock,
    });
    await settle();
    expect(server.closeCalls).toBe(1);
    server.answered();
    expect(await status).toBe(0);
  });
});
