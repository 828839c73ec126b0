// A Sandbox and a pod of it as the Sandbox controller makes them: labelled for the webhook's objectSelector and
// owned by the Sandbox, whose runtimes (and policy) the webhook reads in cluster mode.
import type { TestCluster } from './cluster.js';

/** Creates a Sandbox with this spec and returns its uid, which the pod's owner reference must name. */
export async function createSandbox(
  cluster: TestCluster,
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<string> {
  const created = JSON.parse(
    await cluster.kubectlOk(['create', '-f', '-', '-o', 'json'], {
      input: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'Sandbox',
        metadata: { name, namespace },
        spec,
      }),
    }),
  ) as { metadata: { uid: string } };
  return created.metadata.uid;
}

/** A pod of the Sandbox `name` (uid `uid`), named `<name>-...`, with these containers. */
export function sandboxPod(
  namespace: string,
  name: string,
  uid: string,
  containers: Record<string, unknown>[],
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${name}-`,
      namespace,
      labels: { 'agents.kruise.io/created-by': 'sandbox' },
      ownerReferences: [{ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name, uid, controller: true }],
    },
    spec: { automountServiceAccountToken: false, containers },
  };
}
