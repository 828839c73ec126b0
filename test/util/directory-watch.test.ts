/** The directory watcher behind both reloaders: debounce, resync, close. */
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directoryWatcher, type Timers } from '../../src/util/directory-watch.js';
import { temporaryDirectory } from '../server/support/pki.js';

let dir: string;
let removeDir: () => Promise<void>;
beforeAll(async () => {
  ({ dir, remove: removeDir } = await temporaryDirectory('watch'));
});
afterAll(() => removeDir());

/** Timers the test fires by hand. */
function manualTimers(): Timers & { fireTimeouts(): void; fireIntervals(): void; pending(): number } {
  let nextId = 0;
  const timeouts = new Map<number, () => void>();
  const intervals = new Map<number, () => void>();
  return {
    setTimeout: (callback) => (timeouts.set((nextId += 1), callback), nextId),
    clearTimeout: (handle) => timeouts.delete(handle as number),
    setInterval: (callback) => (intervals.set((nextId += 1), callback), nextId),
    clearInterval: (handle) => intervals.delete(handle as number),
    fireTimeouts: () => {
      const due = [...timeouts.values()];
      timeouts.clear();
      for (const callback of due) callback();
    },
    fireIntervals: () => {
      for (const callback of intervals.values()) callback();
    },
    pending: () => timeouts.size,
  };
}

describe('directoryWatcher', () => {
  it('turns a burst of file events into one pending call', async () => {
    let calls = 0;
    const timers = manualTimers();
    const watch = directoryWatcher({ debounceMs: 150, resyncMs: 0, timers, onError: () => undefined });
    const watcher = watch([dir, dir], () => (calls += 1));
    for (let i = 0; i < 5; i += 1) await writeFile(`${dir}/burst-${i}`, 'x');
    // Real file events arrive when the kernel delivers them; wait for the first one, not for a time.
    while (timers.pending() === 0) await sleep(5);
    // However many events arrived, each replaced the pending call instead of adding one.
    expect(timers.pending()).toBe(1);
    expect(calls).toBe(0);
    timers.fireTimeouts();
    expect(calls).toBe(1);
    watcher.close();
  });

  /** A watcher with a resync interval, on timers the test fires, counting its calls. */
  function resyncingWatcher() {
    const state = { calls: 0, timers: manualTimers() };
    const watcher = directoryWatcher({
      debounceMs: 100,
      resyncMs: 60_000,
      timers: state.timers,
      onError: () => undefined,
    })([dir], () => (state.calls += 1));
    return { state, watcher };
  }

  it('resyncs on its interval even without events, through the same debounce', () => {
    const { state, watcher } = resyncingWatcher();
    state.timers.fireIntervals();
    expect(state.calls).toBe(0);
    state.timers.fireTimeouts();
    expect(state.calls).toBe(1);
    watcher.close();
  });

  it('calls nothing after close, even with a debounce pending', () => {
    const { state, watcher } = resyncingWatcher();
    state.timers.fireIntervals();
    watcher.close();
    state.timers.fireTimeouts();
    state.timers.fireIntervals();
    expect(state.calls).toBe(0);
  });
});
