/**
 * Whether this process runs in a pod that can reach the API as its service account: what createKubeClients
 * (clients.ts) uses when no kubeconfig is given. kubelet sets KUBERNETES_SERVICE_HOST in every container, but
 * mounts the token only when the pod automounts it. The variable is checked first, so a run outside a pod
 * never looks at the filesystem.
 */
import { existsSync } from 'node:fs';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export function hasInClusterCredentials(
  env: NodeJS.ProcessEnv,
  fileExists: (path: string) => boolean = existsSync,
): boolean {
  return env.KUBERNETES_SERVICE_HOST !== undefined && fileExists(SERVICE_ACCOUNT_TOKEN);
}
