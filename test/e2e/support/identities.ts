// Identities other than the cluster's admin, each with a kubeconfig of its own, so kube-apiserver authenticates
// them for real and hands the webhook their userInfo (not an impersonated one).
import path from 'node:path';
import { createClientCert, type CertAndKey } from '../../server/support/pki.js';
import type { TestCluster } from './cluster.js';
import { clientCertUser, writeKubeconfig } from './kubeconfig.js';
import type { KubectlOptions, KubectlResult } from './kubectl.js';

export interface Identity {
  /** The user name kube-apiserver authenticates this identity as. */
  username: string;
  kubeconfigPath: string;
  /** Set for certificate identities, for requests made without kubectl. */
  clientCert?: CertAndKey;
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
}

function identity(
  cluster: TestCluster,
  username: string,
  file: string,
  user: Record<string, string>,
  clientCert?: CertAndKey,
): Identity {
  const kubeconfigPath = path.join(cluster.dir, file);
  writeKubeconfig(kubeconfigPath, cluster.server, cluster.caPem, 'user', user);
  return {
    username,
    kubeconfigPath,
    ...(clientCert === undefined ? {} : { clientCert }),
    kubectl: (args, opts = {}) =>
      cluster.kubectl(args, { ...opts, env: { ...(opts.env ?? {}), KUBECONFIG: kubeconfigPath } }),
  };
}

/** A user from a client certificate of the cluster CA: CN is the user name, each O a group. */
export function certificateIdentity(cluster: TestCluster, username: string, groups: string[] = []): Identity {
  const cert = createClientCert(cluster.ca, username, groups);
  return identity(
    cluster,
    username,
    `kubeconfig-cert-${username.replaceAll(/[^a-z0-9-]/g, '_')}`,
    clientCertUser(cert),
    cert,
  );
}

/**
 * A ServiceAccount, authenticated by a token from the TokenRequest API as a pod of it would be: kube-apiserver
 * reports `system:serviceaccount:NS:NAME` with the groups `system:serviceaccounts`, `system:serviceaccounts:NS`.
 * The ServiceAccount must exist.
 */
export async function serviceAccountIdentity(cluster: TestCluster, namespace: string, name: string): Promise<Identity> {
  const token = (await cluster.kubectlOk(['create', 'token', name, '-n', namespace, '--duration=1h'])).trim();
  return identity(cluster, `system:serviceaccount:${namespace}:${name}`, `kubeconfig-sa-${namespace}-${name}`, {
    token,
  });
}
