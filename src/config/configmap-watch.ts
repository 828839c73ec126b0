import type { V1ConfigMap } from '@kubernetes/client-node';
import type { ConfigUpdateReport, InjectionConfigStore } from './injection-config.js';
import type { Clock } from '../time/clock.js';
import type { KubeClients } from '../kube-client/clients.js';
import { ResilientWatch } from '../kube-client/resilient-watch.js';

export interface ConfigMapWatchOptions {
  clients: KubeClients;
  namespace: string;
  name: string;
  store: InjectionConfigStore;
  /** Each applied change: for logs and the reload metrics. */
  onApplied?: (report: ConfigUpdateReport, event: 'list' | 'add' | 'update' | 'delete') => void;
  onError?: (error: unknown, retryInMs: number) => void;
  /** The watch's clock (ResilientWatch). */
  clock?: Clock;
}

/**
 * The injection ConfigMap through a cached watch of that one object: admissions read the store, never the
 * API. The field selector keeps the watch (and the RBAC it needs) to the single ConfigMap.
 */
export function watchInjectionConfigMap(options: ConfigMapWatchOptions): ResilientWatch<V1ConfigMap> {
  const { clients, namespace, name, store } = options;
  const fieldSelector = `metadata.name=${name}`;
  // ListWatch announces every listed object again as "add"; the version tells a repeat from a change.
  let appliedVersion: string | undefined;
  const apply = (item: V1ConfigMap | undefined, event: 'list' | 'add' | 'update' | 'delete'): void => {
    const version = item?.metadata?.resourceVersion;
    if (event !== 'delete' && event !== 'list' && version !== undefined && version === appliedVersion) return;
    appliedVersion = event === 'delete' ? undefined : version;
    options.onApplied?.(store.update(item === undefined ? undefined : (item.data ?? {})), event);
  };
  const watch = new ResilientWatch<V1ConfigMap>({
    watch: clients.watch,
    path: `/api/v1/namespaces/${namespace}/configmaps`,
    fieldSelector,
    list: (page) => clients.core.listNamespacedConfigMap({ namespace, fieldSelector, ...page }),
    onList: (items) => {
      const found = items.find((item) => item.metadata?.name === name);
      apply(found, 'list');
    },
    onAdd: (item) => apply(item, 'add'),
    onUpdate: (item) => apply(item, 'update'),
    onDelete: () => apply(undefined, 'delete'),
    onError: options.onError,
    clock: options.clock,
  });
  watch.start();
  return watch;
}
