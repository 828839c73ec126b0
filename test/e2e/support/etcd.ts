// The cluster's etcd: one member on loopback, data in `<dir>/etcd-data`.
import path from 'node:path';
import { startProcess, type ManagedProcess } from './processes.js';
import { httpGet, untilServing } from './readiness.js';

export interface EtcdUrls {
  /** Where kube-apiserver reaches etcd (http://127.0.0.1:<port>). */
  clientUrl: string;
  peerUrl: string;
}

export function startEtcd(binDir: string, dir: string, urls: EtcdUrls): ManagedProcess {
  return startProcess(
    'etcd',
    path.join(binDir, 'etcd'),
    [
      '--name=e2e',
      `--data-dir=${path.join(dir, 'etcd-data')}`,
      `--listen-client-urls=${urls.clientUrl}`,
      `--advertise-client-urls=${urls.clientUrl}`,
      `--listen-peer-urls=${urls.peerUrl}`,
      `--initial-advertise-peer-urls=${urls.peerUrl}`,
      `--initial-cluster=e2e=${urls.peerUrl}`,
      '--initial-cluster-state=new',
      // A throw-away store: durability buys nothing and fsync costs seconds.
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    dir,
  );
}

export async function waitForEtcd(etcd: ManagedProcess, clientUrl: string, deadline: number): Promise<void> {
  await untilServing('etcd /health', deadline, [etcd], async () => {
    const r = await httpGet(`${clientUrl}/health`);
    return r.status === 200 && r.body.includes('"true"') ? true : `etcd /health ${r.status} ${r.body}`;
  });
}
