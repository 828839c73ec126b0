/**
 * The Watch a ListWatch is given, with two additions on each watch request:
 *
 * - every object of an ADDED, MODIFIED or DELETED event goes through `transform` before ListWatch sees it, so
 *   its cache stores what the transform keeps (client-node's ListWatch stores what its Watch hands it);
 * - the request asks for bookmarks, and when nothing at all arrives on it for `silenceMs` it is abandoned and
 *   ListWatch is told "410 Gone", its own signal to list again from scratch. A watch whose TCP connection
 *   still stands but carries nothing (a stalled proxy, a half-dead NAT entry, a stuck apiserver) sends no
 *   error and never ends; only its silence shows it.
 */
import type { Clock } from '../time/clock.js';
import { Watch } from '@kubernetes/client-node';

/** Told when a watch was abandoned for its silence, right before the list starts again. */
export class WatchSilentError extends Error {
  readonly statusCode = 410;
  constructor(readonly silentMs: number) {
    super(`no watch event for ${Math.round(silentMs)} ms: listing again`);
    this.name = 'WatchSilentError';
  }
}

/** Events whose object is of the watched kind; BOOKMARK carries only a version and ERROR a Status. */
const OBJECT_EVENTS = new Set(['ADDED', 'MODIFIED', 'DELETED']);

export interface GuardedWatchOptions<T> {
  transform?: (object: T) => T;
  silenceMs: number;
  /** The silence deadline runs on its monotonic time. */
  clock: Clock;
  onSilence: (error: WatchSilentError) => void;
}

type Callback = (phase: string, apiObj: unknown, watchObj?: unknown) => void;
type QueryParams = Record<string, string | number | boolean | undefined>;

export class GuardedWatch<T> extends Watch {
  constructor(
    private readonly inner: Watch,
    private readonly options: GuardedWatchOptions<T>,
  ) {
    super(inner.config);
  }

  /**
   * Resolves at once with a controller of its own: aborting it (ListWatch does, on stop and before each new
   * request) abandons the inner request whenever that one has started.
   */
  override watch(path: string, queryParams: QueryParams, callback: Callback, done: (err: unknown) => void) {
    const { clock, silenceMs, transform } = this.options;
    const request = new AbortController();
    let inner: AbortController | undefined;
    let finished = false;
    let lastEventAt = clock.monotonic();
    let cancelTimer: () => void = () => undefined;
    const end = (): boolean => {
      if (finished) return false;
      finished = true;
      cancelTimer();
      inner?.abort();
      return true;
    };
    const finish = (error: unknown): void => {
      if (end()) done(error);
    };
    request.signal.addEventListener('abort', end, { once: true });
    const check = (): void => {
      if (finished) return;
      const silent = clock.monotonic() - lastEventAt;
      if (silent < silenceMs) {
        cancelTimer = clock.setTimer(check, silenceMs - silent);
        return;
      }
      const error = new WatchSilentError(silent);
      this.options.onSilence(error);
      finish(error);
    };
    cancelTimer = clock.setTimer(check, silenceMs);
    const onEvent: Callback = (phase, object) => {
      if (finished) return;
      lastEventAt = clock.monotonic();
      // The raw event is not passed on: it holds the whole object, which ListWatch does not read anyway.
      callback(phase, transform !== undefined && OBJECT_EVENTS.has(phase) ? transform(object as T) : object);
    };
    this.inner.watch(path, { ...queryParams, allowWatchBookmarks: true }, onEvent, finish).then((controller) => {
      inner = controller;
      if (finished) controller.abort();
    }, finish);
    return Promise.resolve(request);
  }
}
