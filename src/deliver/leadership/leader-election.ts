/**
 * Holds or follows a Lease, so that of several replicas exactly one delivers: the I/O loop around the pure
 * decision in lease.ts. Leadership is handed out as a LeaderTerm: an AbortSignal that is aborted the moment the
 * term ends, and `fresh()`, which the writer asks right before every request it sends.
 *
 * Fresh means: the last successful renew started less than the renew deadline ago, on the monotonic clock.
 * Other replicas take the Lease only once they have seen it unchanged for its whole duration, which is longer
 * than the renew deadline, so a replica that answers `fresh()` truthfully never writes beside another leader.
 * That holds for a replica that was frozen (a GC pause, a stopped VM, SIGSTOP): on waking, its clock has moved
 * on, `fresh()` is false before any timer has had a chance to run, and its term is aborted.
 *
 * Each Lease call is bounded by the renew deadline, so a hung API call cannot keep a stale term alive.
 */
import { CoordinationV1Api, V1MicroTime, type V1Lease } from '@kubernetes/client-node';
import type { KubeClients } from '../../kube-client/clients.js';
import { sleepOn, type Clock } from '../../time/clock.js';
import { leaseAction, observe, type LeaseRecord, type Observation } from './lease.js';

export interface LeaseApi {
  /** undefined when the Lease does not exist. */
  read(): Promise<V1Lease | undefined>;
  create(lease: V1Lease): Promise<V1Lease>;
  /** Fails (409) when `lease.metadata.resourceVersion` is not the current one. */
  replace(lease: V1Lease): Promise<V1Lease>;
}

/** The Lease `namespace/name` through the API server. */
export function kubeLeaseApi(clients: KubeClients, name: string, namespace: string): LeaseApi {
  const api = clients.api(CoordinationV1Api);
  return {
    async read() {
      try {
        return await api.readNamespacedLease({ name, namespace });
      } catch (error) {
        if ((error as { code?: unknown }).code === 404) return undefined;
        throw error;
      }
    },
    create: (body: V1Lease) => api.createNamespacedLease({ namespace, body }),
    replace: (body: V1Lease) => api.replaceNamespacedLease({ name, namespace, body }),
  };
}

/**
 * One stretch of leadership, as everyone who sends on the leader's behalf holds it (the controller, the envd
 * client, pool-pod replacement): what the election hands out, and what is checked before each send.
 */
export interface LeaderTerm {
  /** Aborted the moment the term ends: whatever is in flight is cut. */
  readonly signal: AbortSignal;
  /** True while the Lease is provably still ours: checked right before each request to a sandbox. */
  fresh(): boolean;
}

export interface LeaderElectionDeps {
  api: LeaseApi;
  name: string;
  namespace: string;
  identity: string;
  durationSeconds: number;
  /** How often the Lease is read and, when held, renewed. */
  retryMs: number;
  /** A holder that could not renew for this long stops acting before its Lease can expire for others. */
  renewDeadlineMs: number;
  clock: Clock;
  /** A term began (`term`) or ended (undefined). */
  onTerm: (term: LeaderTerm | undefined) => void;
  onError: (error: unknown) => void;
}

export class LeaseCallTimeout extends Error {
  override readonly name = 'LeaseCallTimeout';
}

export class LeaderElection {
  private observation: Observation | undefined;
  private term: { controller: AbortController; view: LeaderTerm; cancelExpiry: () => void } | undefined;
  private lastRenewStart = 0;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private knowsHolder = false;

  constructor(private readonly deps: LeaderElectionDeps) {}

  /** True once the Lease was read or written: this replica holds it or knows who does. */
  get settled(): boolean {
    return this.knowsHolder;
  }

  get isLeader(): boolean {
    return this.term !== undefined;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops renewing; the term, if any, ends. Call release() after, once the term's work is over. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  /** Stops, and hands the Lease back when held so that another replica takes over at once. */
  async release(): Promise<void> {
    const held = this.isLeader;
    await this.stop();
    this.endTerm();
    if (!held) return;
    try {
      const current = await this.bounded(this.deps.api.read());
      if (current?.spec?.holderIdentity === this.deps.identity) {
        await this.bounded(this.deps.api.replace(this.withHolder(current, '', false)));
      }
    } catch (error) {
      this.deps.onError(error);
    }
  }

  private async run(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      await this.tick();
      if (this.stopping.signal.aborted) break;
      await sleepOn(this.deps.clock, this.deps.retryMs, this.stopping.signal);
    }
    this.endTerm();
  }

  private async tick(): Promise<void> {
    const started = this.deps.clock.monotonic();
    try {
      const current = await this.bounded(this.deps.api.read());
      if (current === undefined) {
        const fresh = { metadata: { name: this.deps.name, namespace: this.deps.namespace } };
        await this.bounded(this.deps.api.create(this.withHolder(fresh, this.deps.identity, true)));
        this.renewed(started);
        return;
      }
      this.knowsHolder = true;
      this.observation = observe(this.observation, recordOf(current), this.deps.clock.monotonic());
      const action = leaseAction(this.deps.identity, this.observation, this.deps.clock.monotonic());
      if (action === 'follow') {
        this.endTerm();
        return;
      }
      await this.bounded(this.deps.api.replace(this.withHolder(current, this.deps.identity, action === 'take')));
      this.renewed(started);
    } catch (error) {
      this.deps.onError(error);
      if (this.term !== undefined && !this.term.view.fresh()) this.endTerm();
    }
  }

  /** A renew that started at `started` succeeded: the term goes on (or begins) until `started` + deadline. */
  private renewed(started: number): void {
    this.knowsHolder = true;
    if (this.stopping.signal.aborted) return;
    this.lastRenewStart = started;
    if (this.term === undefined) {
      const controller = new AbortController();
      const view: LeaderTerm = {
        signal: controller.signal,
        fresh: () =>
          !controller.signal.aborted && this.deps.clock.monotonic() - this.lastRenewStart < this.deps.renewDeadlineMs,
      };
      this.term = { controller, view, cancelExpiry: () => undefined };
      this.armExpiry();
      this.deps.onTerm(view);
      return;
    }
    this.armExpiry();
  }

  /** Ends the term when the deadline passes without a renew, even if no request asks first. */
  private armExpiry(): void {
    const term = this.term;
    if (term === undefined) return;
    term.cancelExpiry();
    const left = this.lastRenewStart + this.deps.renewDeadlineMs - this.deps.clock.monotonic();
    term.cancelExpiry = this.deps.clock.setTimer(
      () => {
        if (this.term === term && !term.view.fresh()) this.endTerm();
        else if (this.term === term) this.armExpiry();
      },
      Math.max(0, left),
    );
  }

  private endTerm(): void {
    const term = this.term;
    if (term === undefined) return;
    this.term = undefined;
    term.cancelExpiry();
    term.controller.abort();
    this.deps.onTerm(undefined);
  }

  /** A Lease call that has not answered within the renew deadline counts as failed. */
  private bounded<T>(call: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const cancel = this.deps.clock.setTimer(
        () => reject(new LeaseCallTimeout(`Lease call took longer than ${this.deps.renewDeadlineMs} ms`)),
        this.deps.renewDeadlineMs,
      );
      call.then(
        (value) => {
          cancel();
          resolve(value);
        },
        (error: unknown) => {
          cancel();
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  private withHolder(lease: V1Lease, holder: string, transition: boolean): V1Lease {
    const now = new V1MicroTime(this.deps.clock.now());
    const spec = lease.spec ?? {};
    return {
      ...lease,
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      spec: {
        ...spec,
        holderIdentity: holder,
        leaseDurationSeconds: this.deps.durationSeconds,
        renewTime: now,
        // A time read back is a plain Date, which would be written with milliseconds: MicroTime needs six digits.
        acquireTime:
          transition || spec.acquireTime === undefined ? now : new V1MicroTime(new Date(spec.acquireTime).getTime()),
        ...(transition ? { leaseTransitions: (spec.leaseTransitions ?? -1) + 1 } : {}),
      },
    };
  }
}

function recordOf(lease: V1Lease): LeaseRecord {
  const renew = lease.spec?.renewTime;
  return {
    holder: lease.spec?.holderIdentity ?? '',
    renewTime: renew === undefined ? '' : new Date(renew).toISOString(),
    durationSeconds: lease.spec?.leaseDurationSeconds ?? 15,
  };
}
