/**
 * The serve mode the options chose (options.ts decides it, once), with what cluster mode needs: its clients.
 * Everything downstream branches on `target.mode`, never on whether a client happens to be there.
 */
import type { Logger } from 'pino';
import type { ServeOptions } from './options.js';
// Type only: @kubernetes/client-node alone is a large share of the RSS (bench/rss.ts, the webhook's memory under
// the bench's load), which a local run (npm start, the benchmark) has no use for, so the module is imported
// where cluster mode starts.
import type { KubeClients } from '../../kube-client/clients.js';

export type ServeTarget = { mode: 'local' } | { mode: 'cluster'; kube: KubeClients };

export async function serveTarget(options: Readonly<ServeOptions>, logger: Logger): Promise<ServeTarget> {
  if (options.mode === 'local') return { mode: 'local' };
  const { createKubeClients } = await import('../../kube-client/clients.js');
  logger.info({ kubeconfig: options.kubeconfig ?? 'in-cluster service account' }, 'cluster mode');
  return { mode: 'cluster', kube: createKubeClients(options.kubeconfig) };
}
