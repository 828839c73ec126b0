import { ListWatch, type KubernetesObject, type Watch } from '@kubernetes/client-node';
import { backoffDelay, type BackoffSettings } from '../time/backoff.js';
import { systemClock, type Clock } from '../time/clock.js';
import { GuardedWatch } from './guarded-watch.js';
import { listAllPages, type ListPageFunction } from './paged-list.js';

/**
 * A watch with no event for this long is abandoned and the list read again. kube-apiserver sends each watcher
 * that asks a bookmark about once a minute (k8s.io/apiserver's cacher, `defaultBookmarkFrequency`), also when
 * nothing changes, so three minutes is two bookmarks missed in a row: no healthy watch is cut, and a dead one
 * costs at most three minutes of stale cache and one list.
 */
export const DEFAULT_SILENCE_MS = 180_000;

/**
 * Between restarts after failures in a row. Half a second lets a brief blip (an API server rolling) cost
 * almost nothing; thirty seconds caps the load a long outage puts on it from every replica, and the stale
 * time after it comes back.
 */
export const DEFAULT_RESTART_BACKOFF: BackoffSettings = { minMs: 500, maxMs: 30_000 };

export interface ResilientWatchOptions<T extends KubernetesObject> {
  watch: Watch;
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** One page of the list; called with `limit` and then each `_continue` until the last page. */
  list: ListPageFunction<T>;
  /** Items per page of the list; default DEFAULT_PAGE_SIZE. */
  pageSize?: number;
  /**
   * Applied to every object as it arrives, listed or watched, before the cache and the callbacks see it: the
   * cache holds only what it returns. It must keep metadata's name, namespace and resourceVersion.
   */
  transform?: (object: T) => T;
  /** Default DEFAULT_SILENCE_MS. */
  silenceMs?: number;
  /** The clock of the silence deadline and of the waits between restarts. Default systemClock. */
  clock?: Clock;
  /** Every successful list, with its items (transformed): the authoritative state at that moment. */
  onList: (items: T[]) => void;
  onAdd?: (object: T) => void;
  onUpdate?: (object: T) => void;
  onDelete?: (object: T) => void;
  /**
   * Told about each failure before the restart is scheduled. A silent watch comes as a WatchSilentError with
   * `retryInMs` 0: its list starts at once.
   */
  onError?: (error: unknown, retryInMs: number) => void;
  /** The waits between restarts; default DEFAULT_RESTART_BACKOFF. */
  backoff?: BackoffSettings;
  /** The backoff's jitter; default Math.random. */
  random?: () => number;
}

/**
 * A client-node ListWatch that reports when it has listed and never stays down. ListWatch has no "synced"
 * flag, and on any error other than 410 Gone it stops for good; this restarts it with the capped, jittered
 * backoff of time/backoff.ts, reset by the next successful list. The list is read in pages, every object is
 * transformed as it arrives, and a watch gone silent is replaced by a new list (guarded-watch.ts).
 */
export class ResilientWatch<T extends KubernetesObject> {
  private readonly listWatch: ListWatch<T>;
  private synced = false;
  private stopped = false;
  private failures = 0;
  private cancelRestart: () => void = () => undefined;
  private readonly clock: Clock;

  constructor(private readonly options: ResilientWatchOptions<T>) {
    this.clock = options.clock ?? systemClock;
    const guarded = new GuardedWatch<T>(options.watch, {
      transform: options.transform,
      silenceMs: options.silenceMs ?? DEFAULT_SILENCE_MS,
      clock: this.clock,
      onSilence: (error) => options.onError?.(error, 0),
    });
    this.listWatch = new ListWatch<T>(
      options.path,
      guarded,
      async () => {
        const list = await listAllPages(options.list, { pageSize: options.pageSize, transform: options.transform });
        this.failures = 0;
        options.onList(list.items);
        this.synced = true;
        return list;
      },
      false,
      options.labelSelector,
      options.fieldSelector,
    );
    if (options.onAdd !== undefined) this.listWatch.on('add', options.onAdd);
    if (options.onUpdate !== undefined) this.listWatch.on('update', options.onUpdate);
    if (options.onDelete !== undefined) this.listWatch.on('delete', options.onDelete);
    this.listWatch.on('error', (error: unknown) => this.restartLater(error));
  }

  /** True once a list has succeeded: the cache has seen the cluster's state at least once. */
  get hasSynced(): boolean {
    return this.synced;
  }

  get(name: string, namespace?: string): T | undefined {
    return this.listWatch.get(name, namespace);
  }

  /** Every cached object (of one namespace, when given). */
  list(namespace?: string): readonly T[] {
    return this.listWatch.list(namespace);
  }

  start(): void {
    this.stopped = false;
    this.listWatch.start().catch((error: unknown) => this.restartLater(error));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelRestart();
    await this.listWatch.stop();
  }

  private restartLater(error: unknown): void {
    if (this.stopped) return;
    this.failures += 1;
    const wait = backoffDelay(
      this.failures,
      this.options.backoff ?? DEFAULT_RESTART_BACKOFF,
      this.options.random ?? Math.random,
    );
    this.options.onError?.(error, wait);
    this.cancelRestart();
    this.cancelRestart = this.clock.setTimer(() => {
      if (!this.stopped) this.start();
    }, wait);
  }
}
