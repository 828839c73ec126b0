/**
 * deliver-env's controller: for each Sandbox key, read the Sandbox and its pod from the caches, decide
 * (claim.ts), look at the pod's env folder, write or clear what differs (plan.ts), and report the outcome. The
 * work queue (work-queue.ts) runs the keys; reconcile returns what happens next.
 *
 * Only the leader works, and only within its term (leader-election.ts): every request is sent only while the
 * term is fresh, and the term's end aborts whatever is in flight. What a term learns lives in its own Memory,
 * which is dropped with it: a request that finishes after its term ended records nothing anywhere.
 *
 * What is remembered is only a shortcut. The truth is in the pod (.env_ready's marker), which is what a
 * restarted or newly elected process reads. One thing is known only from memory: the token a pod's last claim
 * was delivered with, which clearing needs once the claim (and its annotations) are gone. It is never written
 * anywhere; a replica that does not know it says so in an Event instead of clearing.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../util/clock.js';
import type { BackoffSettings } from './backoff.js';
import {
  claimDecision,
  type ClaimDecision,
  type DeliveryPod,
  type DeliverySandbox,
  type RuntimeEndpoint,
  type RuntimeTls,
} from './claim.js';
import { EnvdError, type EnvdFiles, type SendGuard } from './envd-files.js';
import type { DeliveryKind, DeliveryOutcome, FailureEvent, FailureReason } from './outcome.js';
import { clearingSteps, deliverySteps, envPaths, type DeliveryStep, type EnvPaths } from './plan.js';
import { WorkQueue, type QueueFigures, type ReconcileResult } from './work-queue.js';

export interface SandboxCache {
  get(key: string): DeliverySandbox | undefined;
  keys(): Iterable<string>;
  podOf(sandbox: DeliverySandbox): DeliveryPod | undefined;
}

export interface ControllerSettings {
  envDir: string;
  runtimePort: number;
  trustRuntimeUrl: boolean;
  concurrency: number;
  backoff: BackoffSettings;
}

export interface ControllerDeps {
  cache: SandboxCache;
  envd: EnvdFiles;
  settings: ControllerSettings;
  /** The runtime TLS bundle as it is now (the Secret may change). */
  tls: () => RuntimeTls;
  clock: Clock;
  random: () => number;
  report: (outcome: DeliveryOutcome) => void;
  /** A reconcile that threw something unexpected: a bug, reported and retried. */
  onBug: (key: string, error: unknown) => void;
  onRetry?: (key: string, waitMs: number) => void;
  /** The random part of a temporary file's name; one per attempt. */
  nonce?: () => string;
}

/** What one term has learned. */
class Memory {
  /** key -> `podUid url marker` delivered. */
  readonly delivered = new Map<string, string>();
  /** key -> `podUid url` found clear. */
  readonly cleared = new Map<string, string>();
  /** pod UID -> the endpoint (token included) its claim was delivered with: what clearing uses. */
  readonly claimEndpoints = new Map<string, RuntimeEndpoint>();
  /** key -> the last pod delivered to: a later pod of the same claim is a resume. */
  readonly lastPod = new Map<string, string>();
  /** key -> the inputs of a refusal (or refused token): nothing until they change. */
  readonly blocked = new Map<string, string>();
  /** key -> the inputs of an attempt that failed and is being retried. */
  readonly failing = new Map<string, string>();
  /** key -> when the current want was first seen, and what it was. */
  readonly firstSeen = new Map<string, { want: string; at: number }>();

  forget(key: string): void {
    for (const map of [this.delivered, this.cleared, this.lastPod, this.blocked, this.failing, this.firstSeen])
      map.delete(key);
  }
}

export class Controller {
  private term: SendGuard | undefined;
  private memory = new Memory();
  private readonly queue: WorkQueue;
  private readonly paths: EnvPaths;
  /** key -> when it was first queued since its last run (monotonic). */
  private readonly pendingSince = new Map<string, number>();
  private readonly nonce: () => string;

  constructor(private readonly deps: ControllerDeps) {
    this.paths = envPaths(deps.settings.envDir);
    this.nonce = deps.nonce ?? (() => randomBytes(8).toString('hex'));
    this.queue = new WorkQueue({
      concurrency: deps.settings.concurrency,
      retrySlots: Math.max(1, Math.floor(deps.settings.concurrency / 2)),
      backoff: deps.settings.backoff,
      random: deps.random,
      clock: deps.clock,
      work: (key) => this.reconcile(key),
      onBug: deps.onBug,
      onRetry: deps.onRetry,
    });
  }

  /** A term began: every Sandbox is looked at. A term ended: the queue and all it learned are dropped. */
  setTerm(term: SendGuard | undefined): void {
    this.term = term;
    this.memory = new Memory();
    this.queue.clear();
    this.pendingSince.clear();
    if (term !== undefined) for (const key of this.deps.cache.keys()) this.enqueue(key);
  }

  /** Something about `key` changed. A failing key waits out its backoff, unless what it is asked changed. */
  enqueue(key: string): void {
    if (this.term === undefined) return;
    if (!this.pendingSince.has(key)) this.pendingSince.set(key, this.deps.clock.monotonic());
    const failing = this.memory.failing.get(key);
    if (failing !== undefined && this.queue.backingOff(key) && this.decide(key)?.inputs !== failing) {
      this.memory.failing.delete(key);
      this.queue.addNow(key);
      return;
    }
    this.queue.add(key);
  }

  /** True while Sandboxes are queued or being delivered to. */
  busy(): boolean {
    return this.queue.busy();
  }

  figures(): QueueFigures {
    return this.queue.figures();
  }

  /** Takes no more work; resolves once what runs has finished (or been aborted by its term's end). */
  stop(): Promise<void> {
    return this.queue.stop();
  }

  private decide(key: string): ClaimDecision | undefined {
    const sandbox = this.deps.cache.get(key);
    if (sandbox === undefined) return undefined;
    return claimDecision(sandbox, this.deps.cache.podOf(sandbox), {
      runtimePort: this.deps.settings.runtimePort,
      trustRuntimeUrl: this.deps.settings.trustRuntimeUrl,
      tls: this.deps.tls(),
    });
  }

  private async reconcile(key: string): Promise<ReconcileResult> {
    const term = this.term;
    const memory = this.memory;
    const since = this.pendingSince.get(key) ?? this.deps.clock.monotonic();
    this.pendingSince.delete(key);
    if (term === undefined) return { kind: 'done' };
    const decision = this.decide(key);
    if (decision === undefined) {
      memory.forget(key);
      return { kind: 'done' };
    }
    if (memory.blocked.get(key) === decision.inputs) return { kind: 'wait-for-change' };
    memory.blocked.delete(key);
    switch (decision.kind) {
      case 'wait':
        memory.firstSeen.delete(key);
        return { kind: 'wait-for-change' };
      case 'refused': {
        const event = decision.event === 'EnvRequestRefused' ? 'EnvDeliveryFailed' : decision.event;
        return this.refuse(
          memory,
          key,
          decision.inputs,
          decision.podUid,
          'refused',
          event,
          `request refused: ${decision.reason}`,
        );
      }
      case 'unclaimed':
        return this.clear(term, memory, key, decision);
      case 'deliver':
        return this.deliver(term, memory, key, decision, since);
    }
  }

  private async deliver(
    term: SendGuard,
    memory: Memory,
    key: string,
    decision: Extract<ClaimDecision, { kind: 'deliver' }>,
    since: number,
  ): Promise<ReconcileResult> {
    const { target } = decision;
    const want = `${target.podUid} ${target.endpoint.url} ${target.marker}`;
    if (memory.delivered.get(key) === want) return { kind: 'done' };
    const seen = memory.firstSeen.get(key);
    const firstSeenAt = seen?.want === want ? seen.at : since;
    memory.firstSeen.set(key, { want, at: firstSeenAt });
    const retrying = memory.failing.has(key);
    let requests = 0;
    const temps: string[] = [];
    try {
      const ready = await this.deps.envd.readReady(target.endpoint, this.paths.readyFile, term);
      requests += 1;
      const steps = deliverySteps(this.paths, ready, target.content, target.marker, this.nonce());
      for (const step of steps) {
        await this.deps.envd.run(target.endpoint, step, term);
        requests += 1;
        if (step.op === 'upload') temps.push(step.path);
        if (step.op === 'move') temps.splice(temps.indexOf(step.source), 1);
      }
      if (term.signal.aborted) return { kind: 'done' };
      const previousPod = memory.lastPod.get(key);
      memory.delivered.set(key, want);
      memory.claimEndpoints.set(target.podUid, target.endpoint);
      memory.lastPod.set(key, target.podUid);
      memory.cleared.delete(key);
      memory.failing.delete(key);
      memory.firstSeen.delete(key);
      if (steps.length === 0 && !retrying) {
        this.deps.report({ kind: 'unchanged', key, podUid: target.podUid, requests });
        return { kind: 'done' };
      }
      const delivery: DeliveryKind = target.empty
        ? 'empty'
        : ready.found
          ? 'change'
          : previousPod !== undefined && previousPod !== target.podUid
            ? 'resume'
            : 'claim';
      const claimed = target.claimedAtMs;
      this.deps.report({
        kind: 'delivered',
        key,
        podUid: target.podUid,
        delivery,
        variables: target.variableCount,
        requests,
        claimToReadyMs:
          (delivery === 'claim' || delivery === 'empty') && claimed !== undefined
            ? Math.max(0, this.deps.clock.now() - claimed)
            : undefined,
        seenToReadyMs: Math.max(0, this.deps.clock.monotonic() - firstSeenAt),
      });
      return { kind: 'done' };
    } catch (error) {
      if (!(error instanceof EnvdError)) throw error;
      await this.removeQuietly(term, target.endpoint, temps);
      return this.failed(memory, key, decision.inputs, target.podUid, error, 'EnvDeliveryFailed', true);
    }
  }

  /**
   * The pod lives but carries no claim: the files of an earlier one must go. With the token that claim was
   * delivered with, when this term knows it; else without one, which a never-claimed envd accepts and one that
   * was initialised for an earlier claim refuses (then an Event says the files could not be cleared).
   */
  private async clear(
    term: SendGuard,
    memory: Memory,
    key: string,
    decision: Extract<ClaimDecision, { kind: 'unclaimed' }>,
  ): Promise<ReconcileResult> {
    const done = `${decision.podUid} ${decision.endpoint.url}`;
    memory.firstSeen.delete(key);
    if (memory.cleared.get(key) === done) return { kind: 'done' };
    const known = memory.claimEndpoints.get(decision.podUid);
    const endpoint: RuntimeEndpoint = { ...decision.endpoint, accessToken: known?.accessToken };
    let requests = 0;
    try {
      const names = await this.deps.envd.list(endpoint, this.paths.dir, term);
      requests += 1;
      const steps = clearingSteps(this.paths, names);
      for (const step of steps) {
        await this.deps.envd.run(endpoint, step, term);
        requests += 1;
      }
      if (term.signal.aborted) return { kind: 'done' };
      memory.cleared.set(key, done);
      memory.delivered.delete(key);
      memory.claimEndpoints.delete(decision.podUid);
      memory.failing.delete(key);
      if (steps.length > 0) {
        this.deps.report({
          kind: 'delivered',
          key,
          podUid: decision.podUid,
          delivery: 'cleared',
          variables: 0,
          requests,
          claimToReadyMs: undefined,
          seenToReadyMs: 0,
        });
      }
      return { kind: 'done' };
    } catch (error) {
      if (!(error instanceof EnvdError)) throw error;
      if (error.kind === 'unauthorized') {
        const message =
          known === undefined
            ? `${error.message}: the files of an earlier claim may still be in pod ${decision.podUid}, and this replica does not know the token they were delivered with (it started or took the Lease after that delivery)`
            : `${error.message}: envd no longer takes the token the claim was delivered with`;
        return this.refuse(memory, key, decision.inputs, decision.podUid, 'unauthorized', 'EnvNotCleared', message);
      }
      // A pool's pod that was never claimed and is not up yet is no reason to retry for ever: its next change is.
      if (known === undefined && error.kind === 'unavailable') return { kind: 'wait-for-change' };
      return this.failed(memory, key, decision.inputs, decision.podUid, error, 'EnvNotCleared', true);
    }
  }

  private failed(
    memory: Memory,
    key: string,
    inputs: string,
    podUid: string,
    error: EnvdError,
    event: FailureEvent,
    retryable: boolean,
  ): ReconcileResult {
    if (error.kind === 'aborted') return { kind: 'done' };
    if (error.kind === 'unavailable' && retryable) {
      const firstOfStreak = !memory.failing.has(key);
      memory.failing.set(key, inputs);
      this.deps.report({
        kind: 'failed',
        key,
        podUid,
        reason: 'unavailable',
        event,
        message: error.message,
        retrying: true,
        firstOfStreak,
      });
      return { kind: 'retry' };
    }
    return this.refuse(
      memory,
      key,
      inputs,
      podUid,
      error.kind === 'unavailable' ? 'unavailable' : error.kind,
      event,
      error.message,
    );
  }

  private refuse(
    memory: Memory,
    key: string,
    inputs: string,
    podUid: string,
    reason: FailureReason,
    event: FailureEvent,
    message: string,
  ): ReconcileResult {
    memory.blocked.set(key, inputs);
    memory.failing.delete(key);
    this.deps.report({ kind: 'failed', key, podUid, reason, event, message, retrying: false, firstOfStreak: true });
    return { kind: 'wait-for-change' };
  }

  /** A temporary file an attempt uploaded and could not move holds the claim's values: it goes, if it can. */
  private async removeQuietly(term: SendGuard, endpoint: RuntimeEndpoint, paths: readonly string[]): Promise<void> {
    for (const path of paths) {
      const step: DeliveryStep = { op: 'remove', path };
      try {
        await this.deps.envd.run(endpoint, step, term);
      } catch {
        // Best effort: the next attempt, or clearing, lists and removes what is left.
      }
    }
  }
}
