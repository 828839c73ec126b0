import { sandboxOwner } from '../sandbox/owner.js';
import type { AdmissionRequest } from '../kube-shapes/admission-review.js';
import { DENIALS } from '../errors/index.js';
import { POLICY_ANNOTATION, SANDBOX_GROUP, SANDBOX_PLURAL, SANDBOX_VERSION, type Sandbox } from '../sandbox/api.js';
import type { Pod } from '../injection/index.js';
import { runtimesFromAnnotations, selectionFromSandbox, type RuntimeSelection } from '../sandbox/runtime-selection.js';
import { isTrustedCreator, type TrustedCreators } from '../sandbox/trusted-creators.js';
import type { KubeClients } from '../kube-client/clients.js';
import { fieldKeeper, type FieldPath } from '../kube-client/keep-fields.js';
import type { ResilientWatch } from '../kube-client/resilient-watch.js';
import { sandboxListWatch } from '../sandbox/sandbox-watch.js';
import { errorLine } from '../errors/error-message.js';
import type { Clock } from '../time/clock.js';

export type { Sandbox };

/**
 * What the webhook keeps of each Sandbox, cut as it arrives (listed, watched or fetched): identity for the cache
 * and the uid check, and what selectionFromSandbox reads. Nothing else: a Sandbox carries its tenant's claim
 * (`init-runtime-request`, the access token) and status, which the webhook has no use for, in a process every
 * pod can reach on its port. spec.runtimes is kept whole, so a value that is not a list is denied as before;
 * upstream's CRD prunes each runtime to its `name`. A field that selectionFromSandbox starts to read must be
 * added here, or it reads as absent: test/admission/sandbox-runtimes.test.ts reads every Sandbox through this cut,
 * and test/admission/sandbox-cache.test.ts compares the selection of whole and cut Sandboxes.
 */
export const WEBHOOK_SANDBOX_FIELDS: readonly FieldPath[] = [
  ['metadata', 'name'],
  ['metadata', 'namespace'],
  ['metadata', 'uid'],
  ['metadata', 'resourceVersion'],
  ['metadata', 'annotations', POLICY_ANNOTATION],
  ['spec', 'runtimes'],
  ['spec', 'envVarsInjectionPolicy'],
];

/** A Sandbox as the webhook keeps it: WEBHOOK_SANDBOX_FIELDS only. */
export const keepWebhookFields: (sandbox: Sandbox) => Sandbox = fieldKeeper<Sandbox>(WEBHOOK_SANDBOX_FIELDS);

/** Finds a Sandbox by namespace and name: the cache first, the API when the cache has not seen it yet. */
export type SandboxLookup = (namespace: string, name: string, uid: string) => Promise<Sandbox | undefined>;

/** A user name in a denial is cut here: a hand-made review can send megabytes of it, and the message is logged. */
const MAX_NAME_IN_MESSAGE = 256;

function describeCreator(userInfo: unknown): string {
  const username =
    typeof userInfo === 'object' && userInfo !== null ? (userInfo as { username?: unknown }).username : undefined;
  if (typeof username !== 'string' || username === '') return 'a request without a user name';
  const shown = username.length > MAX_NAME_IN_MESSAGE ? `${username.slice(0, MAX_NAME_IN_MESSAGE)}...` : username;
  // JSON quoting keeps control characters and quotes in a name from forging the rest of the message or log line.
  return `user ${JSON.stringify(shown)}`;
}

/**
 * Runtimes and policy from the owning Sandbox. The runtime annotation counts only for pods without a Sandbox
 * owner, and only when the operator allows it: otherwise anyone who may create a pod could ask for privileged
 * sidecars. The policy may also come from the pod (see selectionFromSandbox).
 *
 * With `trustedCreators`, a pod claiming a Sandbox owner from anyone else is denied before the Sandbox is looked
 * up, so an untrusted creator cannot even learn whether the Sandbox exists. Without it every creator is trusted.
 */
export async function runtimesFromOwner(
  pod: Pod,
  request: AdmissionRequest,
  lookup: SandboxLookup,
  allowAnnotationRuntimes: boolean,
  trustedCreators?: TrustedCreators,
): Promise<RuntimeSelection> {
  const owner = sandboxOwner(pod);
  if (owner === undefined) {
    if (allowAnnotationRuntimes) return runtimesFromAnnotations(pod);
    return { ok: true, runtimes: [], policy: 'None', source: 'no Sandbox owner' };
  }
  const namespace = request.namespace ?? pod.metadata.namespace ?? 'default';
  const label = `Sandbox ${namespace}/${owner.name}`;
  if (trustedCreators !== undefined && !isTrustedCreator(trustedCreators, request.userInfo)) {
    return { ok: false, denial: DENIALS.creatorUntrusted(describeCreator(request.userInfo), label) };
  }
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await lookup(namespace, owner.name, owner.uid);
  } catch (error) {
    return { ok: false, denial: DENIALS.sandboxLookupFailed(label, errorLine(error)) };
  }
  if (sandbox === undefined) {
    return { ok: false, denial: DENIALS.sandboxNotFound(label, owner.uid) };
  }
  return selectionFromSandbox(sandbox, pod, label);
}

/**
 * A cached watch of all Sandboxes, with a direct GET when the cache misses or holds an older object. Both give
 * the Sandbox cut to WEBHOOK_SANDBOX_FIELDS.
 */
export function watchSandboxes(
  clients: KubeClients,
  options: { onError?: (error: unknown, retryInMs: number) => void; clock?: Clock } = {},
): { watch: ResilientWatch<Sandbox>; lookup: SandboxLookup } {
  const watch = sandboxListWatch<Sandbox>(clients, {
    transform: keepWebhookFields,
    onList: () => undefined,
    onError: options.onError,
    clock: options.clock,
  });
  watch.start();
  const lookup: SandboxLookup = async (namespace, name, uid) => {
    const cached = watch.get(name, namespace);
    if (cached?.metadata?.uid === uid) return cached;
    try {
      const fetched = keepWebhookFields(
        (await clients.custom.getNamespacedCustomObject({
          group: SANDBOX_GROUP,
          version: SANDBOX_VERSION,
          namespace,
          plural: SANDBOX_PLURAL,
          name,
        })) as Sandbox,
      );
      return fetched.metadata?.uid === uid ? fetched : undefined;
    } catch (error) {
      if ((error as { code?: unknown }).code === 404) return undefined;
      throw error;
    }
  };
  return { watch, lookup };
}
