/**
 * What explain reads for deliver-env's side of a Sandbox (delivery.ts): the pods of its namespace that the
 * Sandbox controller made, deliver-env's Events on the Sandbox, deliver-env's Lease and, when given, the
 * runtimes' TLS Secret. Events, the Lease and the Secret, when a read of them is refused, become unknown or
 * unusable in the explanation; the pods are what the decision is made on, so a refused list fails explain.
 * Loaded only in a cluster: the TLS Secret's reader brings client-node's watch code with it.
 */
import type { DeliveryPod, DeliverySandbox } from '../../deliver/controller/claim.js';
import { runtimeTlsAgent, tlsBundleFromSecretData } from '../../deliver/envd/runtime-tls.js';
import { secretRefOf, type RuntimeTlsState } from '../../deliver/envd/runtime-tls-source.js';
import { SANDBOX_POD_SELECTOR } from '../../sandbox/api.js';
import { errorMessage } from '../../errors/error-message.js';
import { UsageError } from '../command.js';
import { leaseTerm } from '../preflight/checks-install.js';
import type { ClusterReads } from './cluster-reads.js';
import type { DeliveryFacts, LeaseFacts, SandboxEventRecord } from './delivery-facts.js';
import type { DeliverySettings } from './delivery-settings.js';

/** Pods are listed a page at a time, each page cut to the Sandbox's own before the next is read. */
const PAGE = 500;

export async function deliveryFacts(
  reads: ClusterReads,
  sandbox: DeliverySandbox,
  settings: DeliverySettings,
  now: () => number,
): Promise<DeliveryFacts> {
  const secret = settings.tlsSecret === undefined ? undefined : secretRefOf(settings.tlsSecret);
  if (settings.tlsSecret !== undefined && secret === undefined)
    throw new UsageError(`--runtime-tls-secret: "${settings.tlsSecret}" is not NAMESPACE/NAME`);
  const namespace = sandbox.metadata?.namespace ?? 'default';
  const pods = await sandboxPods(reads, namespace, sandbox.metadata?.name ?? '');
  const events = await sandboxEvents(reads, namespace, sandbox.metadata?.uid ?? '');
  const lease = await leaseFacts(reads, settings.lease);
  const tls = await tlsState(reads, secret);
  return {
    sandbox,
    pods,
    ...events,
    lease,
    settings: { ...settings.claim, tls },
    recycledPods: settings.recycledPods,
    now: now(),
  };
}

/** The namespace's pods labelled as the Sandbox controller's whose controller owner names the Sandbox. */
async function sandboxPods(reads: ClusterReads, namespace: string, sandbox: string): Promise<DeliveryPod[]> {
  const pods: DeliveryPod[] = [];
  let token: string | undefined;
  do {
    const query = new URLSearchParams({ labelSelector: SANDBOX_POD_SELECTOR, limit: String(PAGE) });
    if (token !== undefined) query.set('continue', token);
    const page = await reads.get(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods?${query.toString()}`);
    const items = Array.isArray(page?.items) ? (page.items as DeliveryPod[]) : [];
    pods.push(
      ...items.filter((pod) =>
        (pod.metadata?.ownerReferences ?? []).some((ref) => ref.controller === true && ref.name === sandbox),
      ),
    );
    const next = (page?.metadata as { continue?: unknown } | undefined)?.continue;
    token = typeof next === 'string' && next !== '' ? next : undefined;
  } while (token !== undefined);
  return pods;
}

async function sandboxEvents(
  reads: ClusterReads,
  namespace: string,
  uid: string,
): Promise<Pick<DeliveryFacts, 'events' | 'eventsProblem'>> {
  const query = new URLSearchParams({ fieldSelector: `involvedObject.uid=${uid}` });
  try {
    const list = await reads.get(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events?${query.toString()}`);
    const items = Array.isArray(list?.items) ? (list.items as Record<string, unknown>[]) : [];
    return { events: items.map(eventRecord) };
  } catch (error) {
    return { events: undefined, eventsProblem: errorMessage(error) };
  }
}

function eventRecord(item: Record<string, unknown>): SandboxEventRecord {
  const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
  const metadata = (item.metadata ?? {}) as Record<string, unknown>;
  const source = (item.source ?? {}) as Record<string, unknown>;
  return {
    reason: text(item.reason) ?? '',
    type: text(item.type) ?? '',
    message: text(item.message) ?? '',
    at: text(item.lastTimestamp) ?? text(item.eventTime) ?? text(metadata.creationTimestamp),
    component: text(source.component) ?? text(item.reportingComponent),
    resourceVersion: text(metadata.resourceVersion),
  };
}

async function leaseFacts(reads: ClusterReads, lease: { namespace: string; name: string }): Promise<LeaseFacts> {
  const name = `${lease.namespace}/${lease.name}`;
  let object: Record<string, unknown> | undefined;
  try {
    object = await reads.get(
      `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(lease.namespace)}/leases/${encodeURIComponent(lease.name)}`,
    );
  } catch (error) {
    return { state: 'unknown', name, why: `cannot be read: ${errorMessage(error)}` };
  }
  if (object === undefined) return { state: 'not-held', name, why: 'it does not exist: deliver-env has never run' };
  const term = leaseTerm(object);
  if ('problem' in term) return { state: 'not-held', name, why: `it ${term.problem}` };
  return { state: 'held', name, holder: term.holder, endsAt: term.endsAt };
}

/** The bundle as deliver-env would hold it: usable, or why not. */
async function tlsState(
  reads: ClusterReads,
  secret: { namespace: string; name: string } | undefined,
): Promise<RuntimeTlsState> {
  if (secret === undefined) return { kind: 'none' };
  const name = `${secret.namespace}/${secret.name}`;
  try {
    const object = await reads.get(
      `/api/v1/namespaces/${encodeURIComponent(secret.namespace)}/secrets/${encodeURIComponent(secret.name)}`,
    );
    if (object === undefined) return { kind: 'broken', reason: `Secret ${name} does not exist` };
    const bundle = tlsBundleFromSecretData(object.data as Record<string, string> | undefined, name);
    return { kind: 'ok', agent: runtimeTlsAgent(bundle), version: 1 };
  } catch (error) {
    return { kind: 'broken', reason: errorMessage(error) };
  }
}
