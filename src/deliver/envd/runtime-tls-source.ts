/**
 * The TLS bundle for runtimes, from the one Secret named by the operator (NAMESPACE/NAME), kept current.
 *
 * A watch of that Secret alone (field selector `metadata.name=NAME` in its namespace, through ResilientWatch as
 * the injection ConfigMap is read), not a re-read on an interval: a rotated CA or client certificate is in use
 * a moment after it is written, not up to an interval later; an idle watch costs kube-apiserver nothing,
 * where a poll costs a GET each time; and RBAC can still hold the controller to that one Secret (`get`, `list`,
 * `watch` with `resourceNames`, which kube-apiserver applies to a list or watch by that field selector).
 *
 * The last good bundle stays in use when the Secret turns bad or is deleted (a rotation half done must not
 * stop deliveries); each such problem is told to `onProblem`. Until a good bundle has been read the state is
 * `broken`, with the reason: a Sandbox that advertises TLS is then refused, never sent to in clear.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Agent } from 'node:https';
import type { KubeClients } from '../../kube-client/clients.js';
import type { Clock } from '../../time/clock.js';
import { ResilientWatch } from '../../kube-client/resilient-watch.js';
import { runtimeTlsAgent, tlsBundleFromSecretData } from './runtime-tls.js';

export type RuntimeTlsState =
  | { kind: 'none' }
  /** `version` goes up by one each time a new bundle replaces the agent. */
  | { kind: 'ok'; agent: Agent; version: number }
  | { kind: 'broken'; reason: string };

export interface SecretRef {
  namespace: string;
  name: string;
}

export interface RuntimeTlsSourceOptions {
  clients: Pick<KubeClients, 'core' | 'watch'>;
  /** undefined: no bundle configured, and `current()` is `none`. */
  secret: SecretRef | undefined;
  /** A new state: a first bundle, a changed one, or the reason none can be used. */
  onChange?: (state: RuntimeTlsState) => void;
  /** The Secret was read but not used; `keptLastGood` when an earlier bundle stays in use. */
  onProblem?: (reason: string, keptLastGood: boolean) => void;
  onError?: (error: unknown, retryInMs: number) => void;
  /** The watch's clock (ResilientWatch). */
  clock?: Clock;
}

export interface RuntimeTlsSource {
  current(): RuntimeTlsState;
  /** True once the Secret has been listed (found or not), or when none is configured. */
  readonly synced: boolean;
  start(): void;
  stop(): Promise<void>;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** `NAMESPACE/NAME`, as the flag gives it; undefined when it is not one. */
export function secretRefOf(text: string): SecretRef | undefined {
  const parts = text.split('/');
  if (parts.length !== 2) return undefined;
  const [namespace = '', name = ''] = parts;
  return DNS_LABEL.test(namespace) && DNS_SUBDOMAIN.test(name) ? { namespace, name } : undefined;
}

export function runtimeTlsSource(options: RuntimeTlsSourceOptions): RuntimeTlsSource {
  const ref = options.secret;
  if (ref === undefined) {
    return { current: () => ({ kind: 'none' }), synced: true, start: () => undefined, stop: () => Promise.resolve() };
  }
  const secretName = `${ref.namespace}/${ref.name}`;
  let state: RuntimeTlsState = { kind: 'broken', reason: `Secret ${secretName} has not been read yet` };
  let digest: string | undefined;
  let version = 0;
  const set = (next: RuntimeTlsState): void => {
    state = next;
    options.onChange?.(next);
  };
  const refuse = (reason: string): void => {
    const keptLastGood = state.kind === 'ok';
    options.onProblem?.(reason, keptLastGood);
    if (!keptLastGood && !(state.kind === 'broken' && state.reason === reason)) set({ kind: 'broken', reason });
  };
  const apply = (secret: V1Secret | undefined): void => {
    if (secret === undefined) {
      refuse(`Secret ${secretName} not found`);
      return;
    }
    let bundle: ReturnType<typeof tlsBundleFromSecretData>;
    try {
      bundle = tlsBundleFromSecretData(secret.data, secretName);
    } catch (error) {
      refuse(error instanceof Error ? error.message : `Secret ${secretName} is not a TLS bundle`);
      return;
    }
    // ListWatch announces every listed object again: the same material keeps its agent and its connections.
    if (bundle.digest === digest && state.kind === 'ok') return;
    digest = bundle.digest;
    version += 1;
    set({ kind: 'ok', agent: runtimeTlsAgent(bundle), version });
  };

  const fieldSelector = `metadata.name=${ref.name}`;
  let synced = false;
  const watch = new ResilientWatch<V1Secret>({
    watch: options.clients.watch,
    path: `/api/v1/namespaces/${ref.namespace}/secrets`,
    fieldSelector,
    list: () => options.clients.core.listNamespacedSecret({ namespace: ref.namespace, fieldSelector }),
    onList: (items) => {
      apply(items.find((item) => item.metadata?.name === ref.name));
      synced = true;
    },
    onAdd: apply,
    onUpdate: apply,
    onDelete: () => apply(undefined),
    onError: options.onError,
    clock: options.clock,
  });
  return {
    current: () => state,
    get synced() {
      return synced;
    },
    start: () => watch.start(),
    stop: () => watch.stop(),
  };
}
