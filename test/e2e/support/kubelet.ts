// The kubelet of the e2e node, and what it needs on this machine (test/e2e/README.md, "The node"):
// - cgroup v1 (hybrid): `failCgroupV1: false`, the cgroupfs driver, no QoS cgroups and no node-allocatable
//   enforcement, so it makes no cgroup tree of its own;
// - it refuses a loopback node IP and then publishes no address at all, so the node registers as `localhost`
//   and the admin patches its status to InternalIP 127.0.0.1, which the kubelet leaves alone;
// - it serves on 127.0.0.1:10250 with a certificate for 127.0.0.1, x509 and webhook authentication and webhook
//   authorization: kube-apiserver reaches it for logs with a client certificate of a CA of the node's own.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createCa, createClientCert, createServingCert, type CertAndKey } from '../../server/support/pki.js';
import type { TestCluster } from './cluster.js';
import { clientCertUser, writeKubeconfig } from './kubeconfig.js';
import { startProcess, type ManagedProcess } from './processes.js';

export const NODE_NAME = 'localhost';

/** What kube-apiserver is told before it starts, so that it can reach the kubelet (logs, exec). */
export interface KubeletPki {
  caFile: string;
  servingCertFile: string;
  servingKeyFile: string;
  apiserverClientCertFile: string;
  apiserverClientKeyFile: string;
}

/** A CA of the node's own: it signs the kubelet's serving certificate and kube-apiserver's client certificate. */
export function writeKubeletPki(dir: string): KubeletPki {
  mkdirSync(dir, { recursive: true });
  const ca: CertAndKey = createCa('sandbox-injector-e2e-node-ca');
  const serving = createServingCert(ca, { commonName: NODE_NAME, dnsNames: [NODE_NAME], ipAddresses: ['127.0.0.1'] });
  const client = createClientCert(ca, 'kube-apiserver-kubelet-client', ['system:masters']);
  const file = (name: string, content: string): string => {
    const p = path.join(dir, name);
    writeFileSync(p, content, { mode: 0o600 });
    return p;
  };
  return {
    caFile: file('ca.crt', ca.certPem),
    servingCertFile: file('kubelet.crt', serving.certPem),
    servingKeyFile: file('kubelet.key', serving.keyPem),
    apiserverClientCertFile: file('apiserver-kubelet-client.crt', client.certPem),
    apiserverClientKeyFile: file('apiserver-kubelet-client.key', client.keyPem),
  };
}

export function apiserverKubeletFlags(pki: KubeletPki): string[] {
  return [
    `--kubelet-client-certificate=${pki.apiserverClientCertFile}`,
    `--kubelet-client-key=${pki.apiserverClientKeyFile}`,
    `--kubelet-certificate-authority=${pki.caFile}`,
    '--kubelet-preferred-address-types=InternalIP,Hostname',
  ];
}

function kubeletConfiguration(dir: string, pki: KubeletPki, runtimeSocket: string): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    address: '127.0.0.1',
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 0,
    tlsCertFile: pki.servingCertFile,
    tlsPrivateKeyFile: pki.servingKeyFile,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: pki.caFile },
    },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${runtimeSocket}`,
    podLogsDir: path.join(dir, 'pod-logs'),
    // The machine's disk is shared: only an almost full one evicts here.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // Status and pod changes reach the API server promptly; the defaults are meant for large clusters.
    nodeStatusUpdateFrequency: '2s',
    syncFrequency: '5s',
    serializeImagePulls: false,
    registerNode: true,
  };
}

/** The kubelet's own credentials: user system:node:localhost, bound to the built-in system:node ClusterRole. */
async function kubeletKubeconfig(cluster: TestCluster, file: string): Promise<void> {
  const user = `system:node:${NODE_NAME}`;
  const cert = createClientCert(cluster.ca, user, ['system:nodes']);
  writeKubeconfig(file, cluster.server, cluster.caPem, user, clientCertUser(cert));
  await cluster.applyObject({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'e2e-node-localhost' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  });
}

export async function startKubelet(
  binDir: string,
  dir: string,
  cluster: TestCluster,
  pki: KubeletPki,
  runtimeSocket: string,
): Promise<ManagedProcess> {
  const configFile = path.join(dir, 'kubelet-config.json');
  writeFileSync(configFile, JSON.stringify(kubeletConfiguration(dir, pki, runtimeSocket), null, 2));
  const kubeconfig = path.join(dir, 'kubelet.kubeconfig');
  await kubeletKubeconfig(cluster, kubeconfig);
  return startProcess(
    'kubelet',
    path.join(binDir, 'kubelet'),
    [
      `--config=${configFile}`,
      `--kubeconfig=${kubeconfig}`,
      `--root-dir=${path.join(dir, 'kubelet')}`,
      `--cert-dir=${path.join(dir, 'kubelet-pki')}`,
      `--hostname-override=${NODE_NAME}`,
      '--v=2',
    ],
    dir,
  );
}

/** The node as kube-apiserver and the tests reach it: 127.0.0.1, written by the admin (see the header). */
export async function publishNodeAddress(cluster: TestCluster): Promise<void> {
  const status = {
    status: {
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: NODE_NAME },
      ],
    },
  };
  await cluster.kubectlOk([
    'patch',
    'node',
    NODE_NAME,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify(status),
  ]);
}
