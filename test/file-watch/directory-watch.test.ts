/** The directory watcher behind both reloaders: debounce, resync, close. */
import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directoryWatcher } from '../../src/file-watch/directory-watch.js';
import { temporaryDirectory } from '../server/support/pki.js';
import { ManualClock } from '../support/manual-clock.js';

let dir: string;
let removeDir: () => Promise<void>;
beforeAll(async () => {
  ({ dir, remove: removeDir } = await temporaryDirectory('watch'));
});
afterAll(() => removeDir());

describe('directoryWatcher', () => {
  it('turns a burst of file events into one pending call', async () => {
    let calls = 0;
    const clock = new ManualClock();
    const watch = directoryWatcher({ debounceMs: 150, resyncMs: 0, clock, onError: () => undefined });
    const watcher = watch([dir, dir], () => (calls += 1));
    // Real file events arrive when the kernel delivers them: wait for the first one, not for a time.
    const firstEvent = clock.nextTimer();
    for (let i = 0; i < 5; i += 1) await writeFile(`${dir}/burst-${i}`, 'x');
    await firstEvent;
    // However many events arrived, each replaced the pending call instead of adding one.
    expect(clock.pending()).toEqual([150]);
    expect(calls).toBe(0);
    clock.advance(150);
    expect(calls).toBe(1);
    watcher.close();
  });

  /** A watcher with a resync interval, on a clock the test moves, counting its calls. */
  function resyncingWatcher() {
    const state = { calls: 0, clock: new ManualClock() };
    const watcher = directoryWatcher({
      debounceMs: 100,
      resyncMs: 60_000,
      clock: state.clock,
      onError: () => undefined,
    })([dir], () => (state.calls += 1));
    return { state, watcher };
  }

  it('resyncs on its interval even without events, through the same debounce, again and again', () => {
    const { state, watcher } = resyncingWatcher();
    state.clock.advance(60_000);
    expect(state.calls).toBe(0);
    state.clock.advance(100);
    expect(state.calls).toBe(1);
    state.clock.advance(60_000);
    expect(state.calls).toBe(2);
    watcher.close();
  });

  it('calls nothing after close, even with a debounce pending', () => {
    const { state, watcher } = resyncingWatcher();
    state.clock.advance(60_000);
    watcher.close();
    state.clock.advance(120_000);
    expect(state.calls).toBe(0);
    expect(state.clock.pending()).toEqual([]);
  });
});
