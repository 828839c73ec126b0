import { ListWatch, type KubernetesListObject, type KubernetesObject, type Watch } from '@kubernetes/client-node';
import { unrefSleep } from '../../util/sleep.js';

export interface ResilientWatchOptions<T extends KubernetesObject> {
  watch: Watch;
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  list: () => Promise<KubernetesListObject<T>>;
  /** Every successful list, with its items: the authoritative state at that moment. */
  onList: (items: T[]) => void;
  onAdd?: (object: T) => void;
  onUpdate?: (object: T) => void;
  onDelete?: (object: T) => void;
  /** Told about each failure before the restart is scheduled. */
  onError?: (error: unknown, retryInMs: number) => void;
  /** Waits between restarts; injectable so tests need no real clock. */
  delay?: (ms: number) => Promise<void>;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * A client-node ListWatch that reports when it has listed and never stays down. ListWatch has no "synced"
 * flag, and on any error other than 410 Gone it stops for good; this restarts it with capped exponential
 * backoff, reset by the next successful list.
 */
export class ResilientWatch<T extends KubernetesObject> {
  private readonly listWatch: ListWatch<T>;
  private synced = false;
  private stopped = false;
  private failures = 0;
  private readonly delay: (ms: number) => Promise<void>;

  constructor(private readonly options: ResilientWatchOptions<T>) {
    this.delay = options.delay ?? unrefSleep;
    this.listWatch = new ListWatch<T>(
      options.path,
      options.watch,
      async () => {
        const list = await options.list();
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
    await this.listWatch.stop();
  }

  private restartLater(error: unknown): void {
    if (this.stopped) return;
    const min = this.options.minBackoffMs ?? 500;
    const max = this.options.maxBackoffMs ?? 30_000;
    const wait = Math.min(max, min * 2 ** this.failures);
    this.failures += 1;
    this.options.onError?.(error, wait);
    void this.delay(wait).then(() => {
      if (!this.stopped) this.start();
    });
  }
}
