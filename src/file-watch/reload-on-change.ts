/**
 * "Reload when a watched directory changes": the skeleton the certificate reloader (server/) and the config
 * file watch (config/) share. One load at a time; changes that arrive meanwhile collapse into a single
 * follow-up load (file-watch/coalesce.ts); every result is reported; after close() nothing is loaded.
 */
import { coalesced } from './coalesce.js';
import type { WatchDirectories } from './directory-watch.js';

export interface ReloadOnChangeDeps<T> {
  watch: WatchDirectories;
  dirs: readonly string[];
  /**
   * Reads and applies the current state; must not reject (a failure is a result). `closed` turns true
   * when close() is called, so a load that retries can give up.
   */
  load(closed: () => boolean): Promise<T>;
  /** What a load queued before close() reports instead: it has nothing left to serve. */
  whenClosed: T;
  /** Called with every result, `whenClosed` included. */
  onResult(result: T): void;
}

/** Plain functions, not methods: the reloaders hand them on as their own. */
export interface ReloadOnChange<T> {
  /** Loads now, or joins the follow-up already queued. */
  readonly reload: () => Promise<T>;
  /** Stops watching and waits for a load in progress. */
  readonly close: () => Promise<void>;
}

/** Starts watching `dirs` at once; loads only on a change or a call to reload(). */
export function reloadOnChange<T>(deps: ReloadOnChangeDeps<T>): ReloadOnChange<T> {
  let closed = false;
  const isClosed = (): boolean => closed;
  const loads = coalesced(async () => {
    const result = closed ? deps.whenClosed : await deps.load(isClosed);
    deps.onResult(result);
    return result;
  });
  const reload = (): Promise<T> => loads.run();
  const watcher = deps.watch(deps.dirs, () => void reload());
  return {
    reload,
    async close() {
      closed = true;
      watcher.close();
      await loads.idle();
    },
  };
}
