// kube-controller-manager's Deployment controller, played by the tests for the one case they need: a Deployment
// scaled to 0 replicas. The e2e cluster runs no controllers, so a Deployment never gets a ReplicaSet and
// `helm install --wait` would wait forever. For 0 replicas the real controller does exactly this (facts from
// kubernetes/pkg/controller/deployment; the code is our own):
//   1. a ReplicaSet named <deployment>-<hash> with the Deployment's pod template, the label pod-template-hash
//      added to its template and selector, 0 replicas, and a controller ownerReference to the Deployment;
//   2. the ReplicaSet's status: 0 replicas, observedGeneration its generation;
//   3. the Deployment's status: observedGeneration its generation, 0 replicas.
// Nothing here claims a pod is ready: with 0 replicas there is none. helm's readiness check for a Deployment
// looks for that ReplicaSet (by selector, owner and template) and compares the generations.
import { createHash } from 'node:crypto';
import type { TestCluster } from './cluster.js';
import { at } from './json.js';

type Json = Record<string, unknown>;

export async function settleScaledToZero(cluster: TestCluster, namespace: string, name: string): Promise<void> {
  const deployment = JSON.parse(
    await cluster.kubectlOk(['-n', namespace, 'get', 'deployment', name, '-o', 'json']),
  ) as Json;
  const replicas = at(deployment, 'spec', 'replicas');
  if (replicas !== 0)
    throw new Error(
      `deployment ${namespace}/${name} has ${String(replicas)} replicas; only 0 can be settled without a kubelet`,
    );
  const template = structuredClone(at(deployment, 'spec', 'template')) as Json & {
    metadata: { labels: Record<string, string> };
  };
  // The controller hashes the template (with a collision count); any stable label-safe digest serves here.
  const hash = createHash('sha256').update(JSON.stringify(template)).digest('hex').slice(0, 10);
  template.metadata.labels = { ...template.metadata.labels, 'pod-template-hash': hash };
  const selector = structuredClone(at(deployment, 'spec', 'selector')) as { matchLabels?: Record<string, string> };
  selector.matchLabels = { ...(selector.matchLabels ?? {}), 'pod-template-hash': hash };
  const rsName = `${name}-${hash}`;
  const replicaSet = {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: rsName,
      namespace,
      labels: template.metadata.labels,
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name,
          uid: at(deployment, 'metadata', 'uid'),
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { replicas: 0, selector, template },
  };
  const created = JSON.parse(
    await cluster.kubectlOk(['create', '-f', '-', '-o', 'json'], { input: JSON.stringify(replicaSet) }),
  ) as Json;
  await patchStatus(cluster, namespace, `replicaset/${rsName}`, {
    replicas: 0,
    observedGeneration: at(created, 'metadata', 'generation'),
  });
  await patchStatus(cluster, namespace, `deployment/${name}`, {
    replicas: 0,
    observedGeneration: at(deployment, 'metadata', 'generation'),
  });
}

async function patchStatus(cluster: TestCluster, namespace: string, target: string, status: Json): Promise<void> {
  await cluster.kubectlOk([
    '-n',
    namespace,
    'patch',
    target,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
}
