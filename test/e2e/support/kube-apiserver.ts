// The cluster's kube-apiserver: its flags, its process, and waiting until it serves.
import path from 'node:path';
import type { ClusterPki } from './cluster-pki.js';
import { startProcess, type ManagedProcess } from './processes.js';
import { httpGet, untilServing, type TlsMaterial } from './readiness.js';

export interface ApiserverFlagsInput {
  dir: string;
  etcdUrl: string;
  port: number;
  pki: ClusterPki;
  /** -v; default 1. */
  verbosity?: number;
  /** Appended last, so a repeated flag wins. */
  extra?: string[];
}

export function apiserverFlags(input: ApiserverFlagsInput): string[] {
  const { pki } = input;
  return [
    `--etcd-servers=${input.etcdUrl}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${input.port}`,
    `--cert-dir=${path.join(input.dir, 'apiserver-certs')}`,
    `--tls-cert-file=${pki.servingCertFile}`,
    `--tls-private-key-file=${pki.servingKeyFile}`,
    `--client-ca-file=${pki.caFile}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${pki.saPublicKeyFile}`,
    `--service-account-signing-key-file=${pki.saPrivateKeyFile}`,
    // Only used to allocate ClusterIPs in storage; nothing listens there.
    '--service-cluster-ip-range=10.0.0.0/24',
    // Loopback may not be published as the `kubernetes` Service endpoint.
    '--endpoint-reconciler-type=none',
    '--allow-privileged=true',
    '--profiling=false',
    `-v=${input.verbosity ?? 1}`,
    ...(input.extra ?? []),
  ];
}

export function startApiserver(binDir: string, dir: string, flags: string[]): ManagedProcess {
  return startProcess('kube-apiserver', path.join(binDir, 'kube-apiserver'), flags, dir);
}

/** Waits for /readyz and then for the `default` namespace, asking as the admin. */
export async function waitForApiserver(
  server: string,
  pki: ClusterPki,
  deadline: number,
  procs: readonly ManagedProcess[],
): Promise<void> {
  const tls: TlsMaterial = { ca: pki.ca.certPem, cert: pki.admin.certPem, key: pki.admin.keyPem };
  await untilServing('kube-apiserver /readyz', deadline, procs, async () => {
    const r = await httpGet(`${server}/readyz`, tls);
    return r.status === 200
      ? true
      : `/readyz ${r.status}: ${r.body
          .split('\n')
          .filter((l) => l.includes('[-]'))
          .join(' ')}`;
  });
  // The `default` namespace is created by a post-start controller that
  // /readyz does not wait for.
  await untilServing('namespace default', deadline, procs, async () => {
    const r = await httpGet(`${server}/api/v1/namespaces/default`, tls);
    return r.status === 200 ? true : `GET namespaces/default ${r.status}`;
  });
}
