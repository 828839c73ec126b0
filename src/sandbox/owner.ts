import type { OwnerReference, Pod } from '../kube-shapes/kubernetes.js';
import { SANDBOX_API_VERSION, SANDBOX_KIND } from './api.js';

/** What the owner is told by, in our shapes and in client-node's alike. */
interface OwnerFields {
  apiVersion?: string;
  kind?: string;
  controller?: boolean;
}

/** The object's controller owner, when it is a Sandbox: a pod under review, or one in deliver-env's cache. */
export function sandboxOwner<R extends OwnerFields = OwnerReference>(object: {
  metadata?: { ownerReferences?: readonly R[] | undefined };
}): R | undefined {
  return (object.metadata?.ownerReferences ?? []).find(
    (ref) => ref.controller === true && ref.apiVersion === SANDBOX_API_VERSION && ref.kind === SANDBOX_KIND,
  );
}

/**
 * How a pod is named before it has a name: kube-apiserver fills `metadata.name` from `generateName` only after
 * admission, so a review names the pod by its generateName, or by the request's name.
 */
export function podName(
  metadata: { name?: string; generateName?: string } | undefined,
  requestName?: string,
): string | undefined {
  return metadata?.name ?? metadata?.generateName ?? requestName;
}

/**
 * Who a warning is about, as `Sandbox namespace/name`: the Sandbox controller reads admission warnings, and a
 * line that does not say which sandbox is of no use in its log. A pod without a Sandbox owner (offline use,
 * annotation-driven pods) is named itself, as the review names it (`podName`).
 */
export function warningSubject(pod: Pod, namespace: string | undefined, name: string | undefined): string {
  const ns = namespace ?? 'default';
  const owner = sandboxOwner(pod);
  if (owner !== undefined) return `Sandbox ${ns}/${owner.name}`;
  return `pod ${ns}/${name ?? ''}`;
}
