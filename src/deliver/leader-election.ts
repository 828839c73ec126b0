/**
 * Holds or follows a Lease, so that of several replicas exactly one delivers: the I/O loop around the pure
 * decision in lease.ts. The Lease API, the clock and the sleep are passed in.
 */
import { V1MicroTime, type V1Lease } from '@kubernetes/client-node';
import { leaseAction, observe, type LeaseRecord, type Observation } from './lease.js';

export interface LeaseApi {
  /** undefined when the Lease does not exist. */
  read(): Promise<V1Lease | undefined>;
  create(lease: V1Lease): Promise<V1Lease>;
  /** Fails (409) when `lease.metadata.resourceVersion` is not the current one. */
  replace(lease: V1Lease): Promise<V1Lease>;
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
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  onLeading: (leading: boolean) => void;
  onError: (error: unknown) => void;
}

export class LeaderElection {
  private observation: Observation | undefined;
  private leading = false;
  private lastRenewMs = 0;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private knowsHolder = false;

  constructor(private readonly deps: LeaderElectionDeps) {}

  /** True once the Lease was read or written: this replica holds it or knows who does. */
  get settled(): boolean {
    return this.knowsHolder;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops, and hands the Lease back when held so another replica takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    if (!this.leading) return;
    this.setLeading(false);
    try {
      const current = await this.deps.api.read();
      if (current?.spec?.holderIdentity === this.deps.identity) {
        await this.deps.api.replace(this.withHolder(current, '', false));
      }
    } catch (error) {
      this.deps.onError(error);
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      await this.tick();
      if (this.stopped) break;
      await this.deps.sleep(this.deps.retryMs);
    }
  }

  private async tick(): Promise<void> {
    const now = this.deps.now();
    try {
      const current = await this.deps.api.read();
      if (current === undefined) {
        await this.deps.api.create(
          this.withHolder(
            { metadata: { name: this.deps.name, namespace: this.deps.namespace } },
            this.deps.identity,
            true,
          ),
        );
        this.acquired(now);
        return;
      }
      this.knowsHolder = true;
      this.observation = observe(this.observation, recordOf(current), now);
      const action = leaseAction(this.deps.identity, this.observation, now);
      if (action === 'follow') {
        this.setLeading(false);
        return;
      }
      await this.deps.api.replace(this.withHolder(current, this.deps.identity, action === 'take'));
      this.acquired(now);
    } catch (error) {
      this.deps.onError(error);
      if (this.leading && this.deps.now() - this.lastRenewMs > this.deps.renewDeadlineMs) this.setLeading(false);
    }
  }

  private acquired(now: number): void {
    this.knowsHolder = true;
    this.lastRenewMs = now;
    this.setLeading(true);
  }

  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    this.deps.onLeading(leading);
  }

  private withHolder(lease: V1Lease, holder: string, transition: boolean): V1Lease {
    const now = new V1MicroTime(this.deps.now());
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
