/**
 * The shutdown sequence (src/cli/serve/shutdown.ts) driven by hand: signals from an EventEmitter, a fake
 * server whose close() the test settles, and fake timers. test/server/shutdown.test.ts runs the same
 * sequence against the built server with real signals and sockets.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
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

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

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

/** Stop signals whose promises the test resolves directly. */
function scriptedSignals(): StopSignals & { send(signal: NodeJS.Signals): void } {
  const emitter = new EventEmitter();
  const signals = listenForStopSignals(emitter);
  return { ...signals, send: (signal) => void emitter.emit(signal, signal) };
}

/** Lets every settled promise run its callbacks. */
async function settle(): Promise<void> {
  await vi.advanceTimersByTimeAsync(0);
}

describe('listenForStopSignals', () => {
  it('resolves first and second with the signals, in order, SIGTERM and SIGINT alike', async () => {
    const emitter = new EventEmitter();
    const signals = listenForStopSignals(emitter);
    emitter.emit('SIGINT', 'SIGINT');
    emitter.emit('SIGTERM', 'SIGTERM');
    expect(await signals.first).toEqual({ signal: 'SIGINT' });
    expect(await signals.second).toEqual({ signal: 'SIGTERM' });
  });

  it('takes the same signal again within REPEATED_SIGNAL_MS as the same request (a group signal npm forwards too)', async () => {
    let clock = 0;
    const emitter = new EventEmitter();
    const signals = listenForStopSignals(emitter, () => clock);
    let second: string | undefined;
    void signals.second.then((stop) => (second = stop.signal));
    emitter.emit('SIGINT', 'SIGINT');
    clock = REPEATED_SIGNAL_MS - 1;
    emitter.emit('SIGINT', 'SIGINT');
    await Promise.resolve();
    expect(await signals.first).toEqual({ signal: 'SIGINT' });
    expect(second).toBeUndefined();
    clock += REPEATED_SIGNAL_MS;
    emitter.emit('SIGINT', 'SIGINT');
    expect(await signals.second).toEqual({ signal: 'SIGINT' });
  });

  it('takes a third signal without failing, and remove() hands the signals back once no echo can come', async () => {
    const emitter = new EventEmitter();
    let clock = 0;
    const slept: number[] = [];
    const signals = listenForStopSignals(
      emitter,
      () => clock,
      (ms) => {
        slept.push(ms);
        // An echo of the last signal while remove() waits is still taken, not left to the default action.
        expect(emitter.listenerCount('SIGTERM')).toBe(1);
        clock += ms;
        return Promise.resolve();
      },
    );
    expect(emitter.listenerCount('SIGTERM')).toBe(1);
    expect(emitter.listenerCount('SIGINT')).toBe(1);
    for (let i = 0; i < 3; i += 1) emitter.emit('SIGTERM', 'SIGTERM');
    clock += 200;
    await signals.remove();
    expect(slept).toEqual([REPEATED_SIGNAL_MS - 200]);
    expect(emitter.listenerCount('SIGTERM')).toBe(0);
    expect(emitter.listenerCount('SIGINT')).toBe(0);
  });

  it('hands the signals back at once when none came', async () => {
    const emitter = new EventEmitter();
    const slept: number[] = [];
    const signals = listenForStopSignals(
      emitter,
      () => 0,
      (ms) => {
        slept.push(ms);
        return Promise.resolve();
      },
    );
    await signals.remove();
    expect(slept).toEqual([]);
    expect(emitter.listenerCount('SIGINT')).toBe(0);
  });
});

describe('drain', () => {
  it('closes idle connections on every sweep until the last admission is answered, then stops sweeping', async () => {
    const server = fakeServer();
    const logger = recordingLogger();
    const drained = drain(server, 30_000, new Promise(() => undefined), logger);
    await vi.advanceTimersByTimeAsync(IDLE_SWEEP_MS * 3);
    expect(server.idleSweeps).toBe(3);
    server.answered();
    expect(await drained).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    expect(server.cutAll).toBe(0);
    expect(logger.lines).toEqual([]);
  });

  it('cuts every connection once the timeout passes, and says so', async () => {
    const server = fakeServer();
    const logger = recordingLogger();
    const drained = drain(server, 5_000, new Promise(() => undefined), logger);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(server.cutAll).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
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
    const signals = scriptedSignals();
    signals.send('SIGTERM');
    const drained = drain(server, 5_000, signals.second, logger);
    signals.send('SIGINT');
    await settle();
    expect(server.cutAll).toBe(1);
    expect(logger.lines[0]?.fields).toEqual({ why: 'second SIGINT' });
    await vi.advanceTimersByTimeAsync(5_000);
    server.answered();
    expect(await drained).toBe(true);
    expect(server.cutAll).toBe(1);
  });
});

describe('shutDownOnSignal', () => {
  function start(delayMs: number) {
    const server = fakeServer();
    const logger = recordingLogger();
    const signals = scriptedSignals();
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
    });
    return { server, logger, signals, status, draining: () => draining };
  }

  it('does nothing until a stop signal', async () => {
    const { server, draining } = start(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(draining()).toBe(false);
    expect(server.closeCalls).toBe(0);
  });

  it('starts draining at once, closes the listener after the delay, and exits 0 once drained', async () => {
    const { server, logger, signals, status, draining } = start(5_000);
    signals.send('SIGTERM');
    await settle();
    expect(draining()).toBe(true);
    expect(logger.lines[0]).toMatchObject({
      message: 'shutting down: draining in-flight admissions',
      fields: { signal: 'SIGTERM' },
    });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(server.closeCalls).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(server.closeCalls).toBe(1);
    server.answered();
    expect(await status).toBe(0);
    expect(logger.lines.at(-1)).toMatchObject({ message: 'stopped', fields: { forced: false } });
  });

  it('a second signal cuts the delay short and the drain with it: exit 1', async () => {
    const { server, logger, signals, status } = start(60_000);
    signals.send('SIGTERM');
    await vi.advanceTimersByTimeAsync(REPEATED_SIGNAL_MS);
    signals.send('SIGTERM');
    await settle();
    expect(server.closeCalls).toBe(1);
    expect(server.cutAll).toBe(1);
    // Only the drain's sweep and timeout are left: the delay's timer went with the second signal.
    expect(vi.getTimerCount()).toBe(2);
    server.answered();
    expect(await status).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
    expect(logger.lines.at(-1)).toMatchObject({ message: 'stopped', fields: { forced: true } });
  });

  it('a signal that came during start-up is acted on as soon as the shutdown waits for one', async () => {
    const server = fakeServer();
    const signals = scriptedSignals();
    signals.send('SIGTERM');
    const status = shutDownOnSignal({
      signals,
      server,
      startDraining: () => undefined,
      delayMs: 0,
      timeoutMs: 30_000,
      logger: recordingLogger(),
    });
    await settle();
    expect(server.closeCalls).toBe(1);
    server.answered();
    expect(await status).toBe(0);
  });
});
