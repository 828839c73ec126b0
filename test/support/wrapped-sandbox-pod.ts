/**
 * A pod of a Sandbox as deliver-env finds it: its controller owner is the Sandbox, and the webhook's status
 * annotation records whether its main container was wrapped for Auto. The deliver-env e2e tests, the image test
 * and the delivery benchmark all create it.
 */
export function wrappedSandboxPod(options: {
  sandbox: string;
  sandboxUid: string | undefined;
  namespace: string;
  name?: string;
  wrapped?: boolean;
}): Record<string, unknown> {
  const { sandbox, sandboxUid, namespace } = options;
  const status = {
    injected: ['agent-runtime'],
    present: [],
    skipped: [],
    wrapped: options.wrapped === false ? [] : ['main'],
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: options.name ?? `${sandbox}-pod`,
      namespace,
      labels: { 'agents.kruise.io/created-by': 'sandbox' },
      annotations: { 'agents.kruise.io/runtime-injection-status': JSON.stringify(status) },
      ownerReferences: [
        { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: sandbox, uid: sandboxUid, controller: true },
      ],
    },
    spec: {
      containers: [
        { name: 'main', image: 'app:1', command: ['/bin/bash', '/var/sandbox/run_with_envs.sh', '--', 'app'] },
      ],
    },
  };
}
