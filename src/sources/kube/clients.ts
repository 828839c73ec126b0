import { CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';

/** The Kubernetes clients the cluster-mode sources use, made once at the edge and passed in. */
export interface KubeClients {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  watch: Watch;
}

/** Without a kubeconfig, the pod's service account: config.ts chose cluster mode only when it is mounted. */
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
