import { CoreV1Api, CustomObjectsApi, KubeConfig, Watch, type Configuration } from '@kubernetes/client-node';
import { KeptAliveAgents, keptAliveClient } from './kept-alive.js';

/** The Kubernetes clients the cluster-mode sources use, made once at the edge and passed in. */
export interface KubeClients {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  watch: Watch;
  /** Any other API group's client, on the same kept-alive connections (kept-alive.ts says why). */
  api<T>(Api: new (configuration: Configuration) => T): T;
}

/**
 * Without a kubeconfig, the pod's service account: the commands' options ask for one unless it is mounted
 * (in-cluster.ts).
 */
export function createKubeClients(kubeconfigPath: string | undefined): KubeClients {
  const kubeConfig = new KubeConfig();
  if (kubeconfigPath === undefined) kubeConfig.loadFromCluster();
  else kubeConfig.loadFromFile(kubeconfigPath);
  const agents = new KeptAliveAgents();
  const api = <T>(Api: new (configuration: Configuration) => T): T => keptAliveClient(kubeConfig, Api, agents);
  return {
    kubeConfig,
    core: api(CoreV1Api),
    custom: api(CustomObjectsApi),
    // A watch is one long request: client-node's own agent per watch is what it needs.
    watch: new Watch(kubeConfig),
    api,
  };
}
