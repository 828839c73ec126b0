/**
 * "Something in these directories changed": the one signal the certificate and config reloaders need.
 *
 * We watch directories, not files: Kubernetes mounts Secrets and ConfigMaps as `tls.crt -> ..data/tls.crt`
 * and swaps the `..data` symlink atomically, so the watched file itself never sees an event. Events are
 * debounced because one swap produces several (create `..data_tmp`, rename over `..data`, unlink the old
 * directory), and a periodic resync covers file systems where inotify misses events (some network volumes).
 * Reloaders compare bytes, so a spurious signal costs one read.
 *
 * A part of its own because its users, the certificate reloader (server/) and the config file watch (config/),
 * may not import from each other.
 */
import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { repeatOn, type Clock } from '../time/clock.js';

export interface Closable {
  close(): void;
}

/** Calls `onChange` (debounced) after something changed in one of `dirs`. Injected so tests drive it. */
export type WatchDirectories = (dirs: readonly string[], onChange: () => void) => Closable;

export interface DirectoryWatchOptions {
  debounceMs: number;
  /** 0 disables the periodic resync. */
  resyncMs: number;
  /** The debounce's and the resync's timers. */
  clock: Clock;
  /** A watcher error (directory removed, too many watches) must not crash the process; it is reported. */
  onError: (dir: string, error: Error) => void;
}

export function directoryWatcher(options: DirectoryWatchOptions): WatchDirectories {
  return (dirs, onChange) => watchDirectories([...new Set(dirs)], onChange, options);
}

function watchDirectories(
  dirs: readonly string[],
  onChange: () => void,
  { debounceMs, resyncMs, clock, onError }: DirectoryWatchOptions,
): Closable {
  let cancelPending: () => void = () => undefined;
  let closed = false;
  const fire = (): void => {
    if (!closed) onChange();
  };
  const schedule = (): void => {
    cancelPending();
    cancelPending = clock.setTimer(fire, debounceMs);
  };

  const watchers: FSWatcher[] = dirs.map((dir) => {
    const watcher = fsWatch(dir, { persistent: false }, schedule);
    watcher.on('error', (error) => onError(dir, error));
    return watcher;
  });
  const cancelResync = resyncMs > 0 ? repeatOn(clock, resyncMs, schedule) : () => undefined;

  return {
    close() {
      closed = true;
      cancelPending();
      cancelResync();
      for (const watcher of watchers) watcher.close();
    },
  };
}
