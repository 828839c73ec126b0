/**
 * Leader election on a coordination.k8s.io Lease, decided purely: given the Lease as last read, what this
 * candidate does. As client-go's leader election does, expiry is judged by this process's own clock from the
 * moment it saw the record change, never by comparing the holder's timestamps with ours (clocks differ).
 */
export interface LeaseRecord {
  holder: string;
  /** The holder's renew time as written; only compared for change. */
  renewTime: string;
  durationSeconds: number;
}

/** The last record seen, and when (our clock) it was first seen that way. */
export interface Observation {
  record: LeaseRecord;
  seenAtMs: number;
}

export type LeaseAction = 'create' | 'renew' | 'take' | 'follow';

export function observe(previous: Observation | undefined, record: LeaseRecord, nowMs: number): Observation {
  const same =
    previous !== undefined &&
    previous.record.holder === record.holder &&
    previous.record.renewTime === record.renewTime &&
    previous.record.durationSeconds === record.durationSeconds;
  return same ? previous : { record, seenAtMs: nowMs };
}

export function leaseAction(identity: string, observation: Observation | undefined, nowMs: number): LeaseAction {
  if (observation === undefined) return 'create';
  const { record, seenAtMs } = observation;
  if (record.holder === identity) return 'renew';
  if (record.holder === '') return 'take';
  const expired = nowMs - seenAtMs > record.durationSeconds * 1000;
  return expired ? 'take' : 'follow';
}
