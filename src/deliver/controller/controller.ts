/**
 * deliver-env's controller: for each Sandbox key, read the Sandbox and its pod from the caches, decide
 * (claim.ts), look at the pod's env folder, write or clear what differs (plan.ts), and report the outcome. The
 * work queue (work-queue.ts) runs the keys; reconcile returns what happens next.
 *
 * Only the leader works, and only within its term (leader-election.ts): every request is sent only while the
 * term is fresh, and the term's end aborts whatever is in flight. What a term learns lives in its own Memory,
 * which is dropped with it: a request that finishes after its term ended records nothing anywhere.
 *
 * What it remembers, per term and across terms, is in memory.ts. The truth is in the pod (.env_ready's marker),
 * which is what a restarted or newly elected process reads; the one thing known only from memory is the token
 * of a Sandbox's last claim, which every replica keeps from the claimed Sandbox it saw. It is never written
 * anywhere; a process that started after the claim ended does not know it, and says so in an Event instead of
 * clearing.
 */
import type { Clock } from '../../time/clock.js';
import { randomHex } from '../envd/random-hex.js';
import type { BackoffSettings } from '../../time/backoff.js';
import { claimDecision, isClaimed, type ClaimDecision, type DeliveryPod, type DeliverySandbox } from './claim.js';
import { clearClaim } from './clear-claim.js';
import { deliverClaim, type StepDeps } from './deliver-claim.js';
import type { EnvdFiles } from '../envd/envd-files.js';
import type { LeaderTerm } from '../leadership/leader-election.js';
import { REFUSALS, type DeliveryOutcome } from './outcome.js';
import { envPaths, type EnvPaths } from '../envd/plan.js';
import type { RuntimeTls } from './runtime-endpoint.js';
import { TRANSIENT_CASES } from '../../sandbox/pod-identity.js';
import { refuse, SeenClaims, TermMemory, type Attempt } from './memory.js';
import { BackoffRateLimiter, type RateLimiter } from './rate-limiter.js';
import type { RecycledPodMode } from './recycle.js';
import { WorkQueue, type QueueFigures, type ReconcileResult, type Run } from './work-queue.js';

/**
 * How long a claim may wait on a pod being made or replaced (no-pod-uid, pod-gone) before a Warning says so:
 * upstream's controller writes the new pod's UID on the Sandbox within a reconcile of creating it, so a resume
 * passes through these cases for well under this.
 */
const HOLD_GRACE_MS = 5_000;

export interface SandboxCache {
  get(key: string): DeliverySandbox | undefined;
  keys(): Iterable<string>;
  /** The pods whose controller owner reference names the Sandbox: candidates, of which identity picks one. */
  podsOf(sandbox: DeliverySandbox): readonly DeliveryPod[];
}

export interface ControllerSettings {
  envDir: string;
  runtimePort: number;
  trustRuntimeUrl: boolean;
  requireTls: boolean;
  allowHostNetwork: boolean;
  /** When a pod that served an earlier claim takes the next one (recycle.ts). */
  recycledPods: RecycledPodMode;
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

export class Controller {
  private term: LeaderTerm | undefined;
  private memory = new TermMemory();
  private readonly queue: WorkQueue;
  private readonly limiter: RateLimiter;
  private readonly paths: EnvPaths;
  private readonly nonce: () => string;
  private readonly seenClaims = new SeenClaims();

  constructor(private readonly deps: ControllerDeps) {
    this.paths = envPaths(deps.settings.envDir);
    this.nonce = deps.nonce ?? (() => randomHex(8));
    this.limiter = new BackoffRateLimiter(deps.settings.backoff, deps.random);
    this.queue = new WorkQueue({
      concurrency: deps.settings.concurrency,
      backgroundSlots: Math.max(1, Math.floor(deps.settings.concurrency / 2)),
      limiter: this.limiter,
      clock: deps.clock,
      work: (key, run) => this.reconcile(key, run),
      onBug: deps.onBug,
      onRetry: deps.onRetry,
    });
  }

  /** A term began: every Sandbox is looked at. A term ended: the queue and all it learned are dropped. */
  setTerm(term: LeaderTerm | undefined): void {
    this.term = term;
    this.memory = new TermMemory();
    this.queue.clear();
    if (term !== undefined) for (const key of this.deps.cache.keys()) this.enqueue(key);
  }

  /**
   * Something about `key` changed (an event of its Sandbox or of one of its pods, or a sweep): the key is queued,
   * and the reconcile reads the cache and decides. Nothing is decided here; two things are read off the cached
   * Sandbox as it is now, neither parsed nor digested:
   * - whether it is claimed, for SeenClaims: the queue merges changes, so a reconcile sees only the latest
   *   version, and a follower runs none, yet a claim's token must be known once the claim is gone;
   * - the lane: a claimed Sandbox goes to the front, an unclaimed one (only ever cleared) to the background, so
   *   that a new term's sweep of a whole pool never holds a claim back.
   */
  enqueue(key: string): void {
    const sandbox = this.deps.cache.get(key);
    this.seenClaims.saw(key, sandbox);
    if (this.term === undefined) return;
    this.queue.add(key, sandbox !== undefined && !isClaimed(sandbox) ? 'background' : 'front');
  }

  /** Something every decision reads changed (the runtime TLS bundle): every Sandbox is looked at again. */
  requeueAll(): void {
    for (const key of this.deps.cache.keys()) this.enqueue(key);
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
    return claimDecision(sandbox, this.deps.cache.podsOf(sandbox), {
      runtimePort: this.deps.settings.runtimePort,
      trustRuntimeUrl: this.deps.settings.trustRuntimeUrl,
      requireTls: this.deps.settings.requireTls,
      allowHostNetwork: this.deps.settings.allowHostNetwork,
      tls: this.deps.tls(),
    });
  }

  private async reconcile(key: string, run: Run): Promise<ReconcileResult> {
    const term = this.term;
    const memory = this.memory;
    if (term === undefined) return { kind: 'done' };
    const decision = this.decide(key);
    if (decision === undefined) {
      memory.forget(key);
      return { kind: 'done' };
    }
    if (run.early) {
      // A change came while the key waits out a backoff or a grace: the wait goes on unless what it would decide
      // on changed. Then the failing attempt is moot: its streak ends, and this run goes on at once.
      const waitingOn = memory.waitingOn(key);
      if (waitingOn === undefined || waitingOn === decision.inputs) return { kind: 'keep-waiting' };
      memory.inputsChanged(key);
      this.limiter.forget(key);
    }
    if (memory.decided(key, decision.inputs, decision.kind === 'held')) return { kind: 'done' };
    const attempt = (podUid: string): Attempt => ({
      memory,
      key,
      inputs: decision.inputs,
      podUid,
      report: this.deps.report,
    });
    const steps: StepDeps = {
      term,
      envd: this.deps.envd,
      paths: this.paths,
      clock: this.deps.clock,
      recycledPods: this.deps.settings.recycledPods,
    };
    switch (decision.kind) {
      case 'wait':
        memory.wantsNothing(key);
        return { kind: 'done' };
      case 'held':
        memory.wantsNothing(key);
        return this.hold(key, memory, decision);
      case 'refused': {
        const event = decision.event === 'EnvRequestRefused' ? 'EnvDeliveryFailed' : decision.event;
        return refuse(attempt(decision.podUid), 'refused', event, REFUSALS[decision.event](decision.reason));
      }
      case 'unclaimed':
        return clearClaim(
          { ...steps, nonce: this.nonce() },
          attempt(decision.podUid),
          decision,
          this.seenClaims.lastClaim(key),
        );
      case 'deliver':
        return deliverClaim({ ...steps, nonce: this.nonce() }, attempt(decision.target.podUid), decision, run.since);
    }
  }

  /**
   * Nothing is sent to a pod that identity could not decide. Where it matters, a Warning says which case it is,
   * once for these inputs; a case of a normal life (a pod being made or replaced) only once it outlasts the grace.
   */
  private hold(key: string, memory: TermMemory, decision: Extract<ClaimDecision, { kind: 'held' }>): ReconcileResult {
    const seen = memory.of(key).held;
    const same = seen?.inputs === decision.inputs;
    if (!decision.warn || (same && seen.reported)) return { kind: 'done' };
    if (TRANSIENT_CASES.has(decision.case) && !same) {
      memory.holding(key, decision.inputs, false);
      return { kind: 'requeue-after', ms: HOLD_GRACE_MS };
    }
    memory.holding(key, decision.inputs, true);
    this.deps.report({ kind: 'held', key, podUid: decision.podUid, case: decision.case, reason: decision.reason });
    return { kind: 'done' };
  }
}
