import type { Pod, PodSpec } from '../../injection/index.js';
import { CREATED_BY, CREATED_BY_SANDBOX, SANDBOX_API_VERSION, SANDBOX_KIND, type Sandbox } from '../../sandbox/api.js';

interface Template {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: PodSpec;
}

/**
 * The pod the Sandbox controller would create for `sandbox`, laid out as upstream's GeneratePodFromSandbox does:
 * the Sandbox's name and namespace, the template's labels, annotations and spec, the created-by label and
 * annotation, and a controller owner reference. The controller's own injection of spec.runtimes is not replayed
 * (that is the controller's code, not ours): a runtime it injects shows here as injected, on the real pod as present.
 */
export function podFromSandboxTemplate(sandbox: Sandbox): Pod {
  // As the API stored it: the review checks the pod's shape before reading it, as it does for any pod.
  const template = structuredClone((sandbox.spec as { template?: Template } | undefined)?.template ?? {});
  const name = sandbox.metadata?.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: sandbox.metadata?.namespace ?? 'default',
      labels: { ...(template.metadata?.labels ?? {}), [CREATED_BY]: CREATED_BY_SANDBOX },
      annotations: { ...(template.metadata?.annotations ?? {}), [CREATED_BY]: CREATED_BY_SANDBOX },
      ownerReferences: [
        {
          apiVersion: SANDBOX_API_VERSION,
          kind: SANDBOX_KIND,
          name,
          uid: sandbox.metadata?.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: template.spec ?? { containers: [] },
  };
}
