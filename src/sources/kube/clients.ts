import { existsSync } from 'node:fs';
import { CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';

/** The Kubernetes clients the cluster-mode sources use, made once at the edge and passed in. */
export interface KubeClients {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  watch: Watch;
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Whether the process runs in a pod with a service account: the signal for cluster mode without --kubeconfig. */
export function runningInCluster(env: NodeJS.ProcessEnv): boolean {
  return env.KUBERNETES_SERVICE_HOST !== undefined && existsSync(SERVICE_ACCOUNT_TOKEN);
}

export function createKubeClients(kubeconfigPath: string | undefined): KubeClients {
  const kubeConfig = new KubeConfig();
  if (kubeconfigPath === undefined) kubeConfig.loadFromCluster();
  else kubeConfig.loadFromFile(kubeconfigPath);
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(CoreV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    watch: new Watch(kubeConfig),
  };
}
