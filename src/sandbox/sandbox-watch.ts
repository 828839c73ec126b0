import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { SANDBOX_API_VERSION, SANDBOX_GROUP, SANDBOX_PLURAL, SANDBOX_VERSION } from './api.js';
import type { KubeClients } from '../kube-client/clients.js';
import { ResilientWatch, type ResilientWatchOptions } from '../kube-client/resilient-watch.js';

/** What a Sandbox watch's owner chooses: how each Sandbox is cut, what is done with it, the clock. */
export type SandboxWatchOptions<T extends KubernetesObject> = Omit<
  ResilientWatchOptions<T>,
  'watch' | 'path' | 'list' | 'labelSelector' | 'fieldSelector'
>;

/**
 * The list-watch of every Sandbox in the cluster, the webhook's (sandbox-runtimes.ts) and deliver-env's
 * (deliver/controller/watches.ts) alike: listed in pages through the custom objects API, then watched. `T` is the Sandbox
 * as its owner keeps it, once `transform` has cut it. Not started: the owner starts it.
 */
export function sandboxListWatch<T extends KubernetesObject>(
  clients: KubeClients,
  options: SandboxWatchOptions<T>,
): ResilientWatch<T> {
  return new ResilientWatch<T>({
    ...options,
    watch: clients.watch,
    path: `/apis/${SANDBOX_API_VERSION}/${SANDBOX_PLURAL}`,
    list: async (page) =>
      (await clients.custom.listClusterCustomObject({
        group: SANDBOX_GROUP,
        version: SANDBOX_VERSION,
        plural: SANDBOX_PLURAL,
        ...page,
      })) as KubernetesListObject<T>,
  });
}
