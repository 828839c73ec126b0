/** The reload skeleton the certificate reloader and the config file watch share (src/file-watch/reload-on-change.ts). */
import { describe, expect, it } from 'vitest';
import { reloadOnChange, type ReloadOnChange } from '../../src/file-watch/reload-on-change.js';

interface Rig {
  reloads: ReloadOnChange<string>;
  /** Fires the watcher's callback, as a change in a watched directory does. */
  change: () => void;
  watched: readonly string[];
  watcherClosed: () => boolean;
  results: string[];
  /** Loads started so far. */
  loads: () => number;
  /** Ends the load in progress with `result`. */
  finish: (result: string) => void;
  /** What `closed()` said to each load when it ended. */
  closedAtEnd: boolean[];
}

/** Loads that end when the test says so. */
function rig(): Rig {
  const pending: ((result: string) => void)[] = [];
  const results: string[] = [];
  const closedAtEnd: boolean[] = [];
  let started = 0;
  let onChange: () => void = () => undefined;
  let watched: readonly string[] = [];
  let watcherClosed = false;
  const reloads = reloadOnChange<string>({
    watch: (dirs, callback) => {
      watched = dirs;
      onChange = callback;
      return { close: () => (watcherClosed = true) };
    },
    dirs: ['/etc/a', '/etc/b'],
    load: (closed) => {
      started += 1;
      return new Promise((resolve) =>
        pending.push((result) => {
          closedAtEnd.push(closed());
          resolve(result);
        }),
      );
    },
    whenClosed: 'closed',
    onResult: (result) => results.push(result),
  });
  return {
    reloads,
    change: () => onChange(),
    watched,
    watcherClosed: () => watcherClosed,
    results,
    loads: () => started,
    finish: (result) => pending.shift()?.(result),
    closedAtEnd,
  };
}

/** Lets promise callbacks queued so far run. */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
}

describe('reloadOnChange', () => {
  it('watches the directories it is given, and loads nothing until a change', async () => {
    const { watched, loads } = rig();
    await flush();
    expect(watched).toEqual(['/etc/a', '/etc/b']);
    expect(loads()).toBe(0);
  });

  it('loads on a change and reports the result', async () => {
    const { change, finish, results, loads } = rig();
    change();
    expect(loads()).toBe(1);
    finish('v1');
    await flush();
    expect(results).toEqual(['v1']);
  });

  it('collapses changes during a load into one follow-up load', async () => {
    const { reloads, change, finish, results, loads } = rig();
    const first = reloads.reload();
    change();
    change();
    const followUp = reloads.reload();
    expect(loads()).toBe(1);
    finish('v1');
    expect(await first).toBe('v1');
    await flush();
    expect(loads()).toBe(2);
    finish('v2');
    expect(await followUp).toBe('v2');
    expect(results).toEqual(['v1', 'v2']);
  });

  it('close() stops watching, tells the load in progress, and waits for it', async () => {
    const { reloads, change, finish, watcherClosed, closedAtEnd } = rig();
    change();
    let closed = false;
    const closing = reloads.close().then(() => (closed = true));
    expect(watcherClosed()).toBe(true);
    await flush();
    expect(closed).toBe(false);
    finish('v1');
    await closing;
    expect(closedAtEnd).toEqual([true]);
  });

  it('a follow-up queued before close() reports `whenClosed` without loading', async () => {
    const { reloads, finish, results, loads } = rig();
    void reloads.reload();
    const followUp = reloads.reload();
    const closing = reloads.close();
    finish('v1');
    await closing;
    expect(await followUp).toBe('closed');
    expect(loads()).toBe(1);
    expect(results).toEqual(['v1', 'closed']);
  });
});
