// The messages between the e2e test and a certificate replica (cert-replica-main.ts), a separate Node
// process running startSelfManagedCertificates as one webhook replica would.

export interface ReplicaConfig {
  kubeconfig: string;
  dir: string;
  namespace: string;
  secretName: string;
  serviceName: string;
  webhookConfigName: string;
  extraSans: string[];
  pollIntervalMs: number;
  retryMinMs: number;
  caOverlapMs: number;
}

/** The environment variable carrying the JSON ReplicaConfig into the child. */
export const REPLICA_CONFIG_ENV = 'SANDBOX_INJECTOR_CERT_REPLICA';

export type ReplicaCommand =
  | { id: number; cmd: 'renew'; rotateCa: boolean }
  /** The replica's clock runs this far ahead of the real one (decisions and certificate dates). */
  | { id: number; cmd: 'clock'; offsetMs: number }
  | { id: number; cmd: 'stop' };

export interface ReplicaLog {
  level: 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown>;
}

export type ReplicaMessage =
  { type: 'ready' } | { type: 'reply'; id: number; ok: boolean; error?: string } | ({ type: 'log' } & ReplicaLog);

export function isReplicaCommand(value: unknown): value is ReplicaCommand {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  if (typeof v.id !== 'number') return false;
  switch (v.cmd) {
    case 'renew':
      return typeof v.rotateCa === 'boolean';
    case 'clock':
      return typeof v.offsetMs === 'number';
    case 'stop':
      return true;
    default:
      return false;
  }
}

export function isReplicaMessage(value: unknown): value is ReplicaMessage {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  switch (v.type) {
    case 'ready':
      return true;
    case 'reply':
      return typeof v.id === 'number' && typeof v.ok === 'boolean';
    case 'log':
      return typeof v.msg === 'string' && typeof v.level === 'string' && typeof v.fields === 'object';
    default:
      return false;
  }
}
