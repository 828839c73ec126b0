/**
 * The reconciler: for each Sandbox key, read the Sandbox and its pod from the caches, decide (claim.ts), look
 * at the pod's env dir, write what is missing (plan.ts), and report the outcome. A work queue runs at most
 * `concurrency` keys at once and never the same key twice at once (a change during a run runs it again after).
 * Only the leader works; losing the Lease drops the queue and what was learned.
 *
 * What is remembered is only a shortcut: a (pod UID, content) delivered by this process is not looked at again.
 * The truth is in the pod (.env_ready's marker), which is what a restarted or newly elected process reads.
 */
import type { Pod } from '../injection/index.js';
import { backoffDelay, type BackoffSettings } from './backoff.js';
import { claimDecision, type DeliverySandbox } from './claim.js';
import { fingerprintOf } from './fingerprint.js';
import type { DeliveryOutcome, FailureReason } from './outcome.js';
import { EnvdError, type EnvdEndpoint, type EnvdFiles } from './envd-files.js';
import { deliverySteps, envPaths, type EnvPaths } from './plan.js';

export type { DeliveryOutcome, FailureReason } from './outcome.js';

export interface SandboxCache {
  get(key: string): DeliverySandbox | undefined;
  keys(): Iterable<string>;
  podOf(sandbox: DeliverySandbox): Pod | undefined;
}

export interface Clock {
  now(): number;
  /** Runs `run` after `ms`; the returned function cancels it. */
  setTimer(run: () => void, ms: number): () => void;
}

export interface DelivererSettings {
  envDir: string;
  user: string;
  runtimePort: number;
  concurrency: number;
  backoff: BackoffSettings;
}

export interface DelivererDeps {
  cache: SandboxCache;
  envd: EnvdFiles;
  settings: DelivererSettings;
  clock: Clock;
  random: () => number;
  report: (outcome: DeliveryOutcome) => void;
  /** A reconcile that threw something unexpected: a bug, reported and retried like a transport error. */
  onBug: (key: string, error: unknown) => void;
}

export class Deliverer {
  private leading = false;
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly timers = new Map<string, () => void>();
  private readonly delivered = new Map<string, string>();
  private readonly blocked = new Map<string, string>();
  private readonly failures = new Map<string, number>();
  private readonly idleWaiters: (() => void)[] = [];
  private readonly paths: EnvPaths;

  constructor(private readonly deps: DelivererDeps) {
    this.paths = envPaths(deps.settings.envDir);
  }

  /** On gaining the Lease every Sandbox is looked at; on losing it everything learned is dropped. */
  setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    if (leading) {
      for (const key of this.deps.cache.keys()) this.enqueue(key);
      return;
    }
    this.queue.length = 0;
    this.queued.clear();
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
    this.delivered.clear();
    this.blocked.clear();
    this.failures.clear();
  }

  enqueue(key: string): void {
    if (!this.leading) return;
    if (this.running.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.pump();
  }

  /** True while Sandboxes are queued or being delivered to. */
  busy(): boolean {
    return this.queue.length > 0 || this.running.size > 0;
  }

  /** Resolves once nothing is queued or running (timers for retries may still be set). */
  idle(): Promise<void> {
    if (!this.busy()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.leading && this.running.size < this.deps.settings.concurrency && this.queue.length > 0) {
      const key = this.queue.shift() as string;
      this.queued.delete(key);
      this.running.add(key);
      void this.reconcile(key)
        .catch((error: unknown) => {
          this.deps.onBug(key, error);
          this.retryLater(key, undefined, 'unavailable', 'internal error', true);
        })
        .finally(() => {
          this.running.delete(key);
          if (this.dirty.delete(key)) this.enqueue(key);
          this.pump();
          if (!this.busy()) for (const done of this.idleWaiters.splice(0)) done();
        });
    }
  }

  private async reconcile(key: string): Promise<void> {
    const sandbox = this.deps.cache.get(key);
    if (sandbox === undefined) {
      this.forget(key);
      return;
    }
    const pod = this.deps.cache.podOf(sandbox);
    const decision = claimDecision(sandbox, pod, { runtimePort: this.deps.settings.runtimePort });
    if (decision.kind === 'skip') {
      this.forget(key);
      return;
    }
    const uid = pod?.metadata.uid;
    const podUid = typeof uid === 'string' ? uid : undefined;
    const fingerprint = fingerprintOf(sandbox, podUid);
    if (this.blocked.get(key) === fingerprint) return;
    if (decision.kind === 'refused') {
      this.block(key, fingerprint, podUid, 'refused', `request refused: ${decision.reason}`);
      return;
    }
    const { target } = decision;
    const deliveredAs = `${target.podUid} ${target.marker}`;
    if (this.delivered.get(key) === deliveredAs) return;

    const endpoint: EnvdEndpoint = {
      runtimeUrl: target.runtimeUrl,
      accessToken: target.accessToken,
      user: this.deps.settings.user,
    };
    let requests = 0;
    // After a failure, the content may be there already: a write the client gave up on can still land.
    const retrying = (this.failures.get(key) ?? 0) > 0;
    try {
      const ready = await this.deps.envd.readReady(endpoint, this.paths.readyFile);
      requests += 1;
      const steps = deliverySteps(this.paths, ready, target.content, target.marker);
      for (const step of steps) {
        await this.deps.envd.run(endpoint, step);
        requests += 1;
      }
      this.delivered.set(key, deliveredAs);
      this.failures.delete(key);
      this.blocked.delete(key);
      if (steps.length === 0 && !retrying) {
        this.deps.report({ kind: 'unchanged', key, podUid: target.podUid, requests });
      } else {
        const claimed = target.claimedAtMs;
        this.deps.report({
          kind: 'delivered',
          key,
          podUid: target.podUid,
          variables: target.variableCount,
          requests,
          claimToReadyMs: claimed === undefined ? undefined : Math.max(0, this.deps.clock.now() - claimed),
          rewrite: steps.length > 0 && ready.found,
        });
      }
    } catch (error) {
      if (!(error instanceof EnvdError)) throw error;
      if (error.kind === 'unavailable') this.retryLater(key, target.podUid, 'unavailable', error.message, false);
      else this.block(key, fingerprint, target.podUid, error.kind, error.message);
    }
  }

  private block(
    key: string,
    fingerprint: string,
    podUid: string | undefined,
    reason: FailureReason,
    message: string,
  ): void {
    this.blocked.set(key, fingerprint);
    this.failures.delete(key);
    this.deps.report({ kind: 'failed', key, podUid, reason, message, retryInMs: undefined, firstOfStreak: true });
  }

  private retryLater(
    key: string,
    podUid: string | undefined,
    reason: FailureReason,
    message: string,
    bug: boolean,
  ): void {
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    const wait = backoffDelay(failures, this.deps.settings.backoff, this.deps.random);
    this.timers.get(key)?.();
    this.timers.set(
      key,
      this.deps.clock.setTimer(() => {
        this.timers.delete(key);
        this.enqueue(key);
      }, wait),
    );
    if (!bug)
      this.deps.report({
        kind: 'failed',
        key,
        podUid,
        reason,
        message,
        retryInMs: wait,
        firstOfStreak: failures === 1,
      });
  }

  private forget(key: string): void {
    this.delivered.delete(key);
    this.blocked.delete(key);
    this.failures.delete(key);
    this.timers.get(key)?.();
    this.timers.delete(key);
  }
}
