// One webhook replica's certificate management in its own process, as in a real Deployment: its own
// KubeClients (a service-account token, so the manifests' RBAC applies), its own directory, its own clock.
// Driven by the e2e test over the IPC channel of child_process.fork (see cert-replicas.ts).
import { readFileSync } from 'node:fs';
import { ApiException } from '@kubernetes/client-node';
import { startSelfManagedCertificates } from '../../../src/certs/self-managed.js';
import type { Logger } from '../../../src/logging/logger.js';
import { systemClock } from '../../../src/time/clock.js';
import { createKubeClients } from '../../../src/kube-client/clients.js';
import {
  REPLICA_CONFIG_ENV,
  isReplicaCommand,
  type ReplicaConfig,
  type ReplicaLog,
  type ReplicaMessage,
} from './cert-replica-protocol.js';

function send(message: ReplicaMessage): void {
  // Without an IPC channel there is nobody to tell; the parent always forks with one.
  process.send?.(message);
}

/** Log fields as plain JSON: an Error would cross the IPC channel as `{}`. */
function plain(fields: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value instanceof ApiException) out[key] = `ApiException ${value.code}: ${String(value.body).slice(0, 300)}`;
    else if (value instanceof Error) out[key] = `${value.name}: ${value.message}`;
    else out[key] = value;
  }
  return out;
}

const log =
  (level: ReplicaLog['level']) =>
  (fields: object, msg: string): void =>
    send({ type: 'log', level, msg, fields: plain(fields) });

const logger: Logger = { info: log('info'), warn: log('warn'), error: log('error') };

function readConfig(): ReplicaConfig {
  const raw = process.env[REPLICA_CONFIG_ENV];
  if (raw === undefined) throw new Error(`${REPLICA_CONFIG_ENV} is not set`);
  return JSON.parse(raw) as ReplicaConfig;
}

const config = readConfig();
// Read once so a missing kubeconfig fails here, with its path, rather than on the first request.
readFileSync(config.kubeconfig);
let offsetMs = 0;
const certs = startSelfManagedCertificates({
  clients: createKubeClients(config.kubeconfig),
  namespace: config.namespace,
  secretName: config.secretName,
  serviceName: config.serviceName,
  webhookConfigName: config.webhookConfigName,
  dir: config.dir,
  extraSans: config.extraSans,
  pollIntervalMs: config.pollIntervalMs,
  retryMinMs: config.retryMinMs,
  caOverlapMs: config.caOverlapMs,
  clock: { ...systemClock, now: () => systemClock.now() + offsetMs },
  logger,
});
certs.ready.then(
  () => send({ type: 'ready' }),
  (error: unknown) => logger.error({ err: error }, 'never became ready'),
);

const reply = (id: number, work: Promise<void>): void => {
  work.then(
    () => send({ type: 'reply', id, ok: true }),
    (error: unknown) =>
      send({ type: 'reply', id, ok: false, error: error instanceof Error ? error.message : String(error) }),
  );
};

process.on('message', (message: unknown) => {
  if (!isReplicaCommand(message)) return;
  switch (message.cmd) {
    case 'renew':
      reply(message.id, certs.renewNow({ rotateCa: message.rotateCa }));
      break;
    case 'clock':
      offsetMs = message.offsetMs;
      reply(message.id, Promise.resolve());
      break;
    case 'stop': {
      const { id } = message;
      // Answer first, then close the channel: the parent waits for the exit that follows.
      certs.stop().then(
        () => {
          send({ type: 'reply', id, ok: true });
          process.disconnect?.();
        },
        (error: unknown) => send({ type: 'reply', id, ok: false, error: String(error) }),
      );
      break;
    }
  }
});

// The test process went away without stopping us: do not linger.
process.on('disconnect', () => {
  void certs.stop().finally(() => process.exit(0));
});
