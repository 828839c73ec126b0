/**
 * What preflight asks of the Sandboxes it lists: which use Auto (the policy chosen as the webhook chooses it,
 * from the Sandbox's field, its annotation, then its pod template's annotation), and whose pods can pull a
 * private image (a pull secret in the template, else one on the pod's service account).
 */
import { POLICY_ANNOTATION } from '../../sandbox/api.js';
import { firstPolicy } from '../../sandbox/runtime-selection.js';
import { field, type Json, listField, stringField } from './facts.js';

/** The Sandboxes whose pods are wrapped for Auto. A policy the webhook would refuse counts as not Auto. */
export function autoSandboxes(sandboxes: readonly Json[]): Json[] {
  return sandboxes.filter((sandbox) => {
    const chosen = firstPolicy([
      [field(sandbox, 'spec', 'envVarsInjectionPolicy'), 'spec'],
      [field(sandbox, 'metadata', 'annotations', POLICY_ANNOTATION), 'annotation'],
      [field(sandbox, 'spec', 'template', 'metadata', 'annotations', POLICY_ANNOTATION), 'template'],
    ]);
    return chosen.ok && chosen.policy === 'Auto';
  });
}

export function sandboxName(sandbox: Json): string {
  return `${stringField(sandbox, 'metadata', 'namespace') ?? '?'}/${stringField(sandbox, 'metadata', 'name') ?? '?'}`;
}

/** Whether the Sandbox's pod template names an image pull secret itself. */
export function templateHasPullSecrets(sandbox: Json): boolean {
  return listField(sandbox, 'spec', 'template', 'spec', 'imagePullSecrets').length > 0;
}

/** `NS/NAME` of the service account the Sandbox's pod runs as (`default` when the template names none). */
export function podServiceAccount(sandbox: Json): string {
  const template = field(sandbox, 'spec', 'template', 'spec');
  const account = stringField(template, 'serviceAccountName') ?? stringField(template, 'serviceAccount') ?? '';
  return `${stringField(sandbox, 'metadata', 'namespace') ?? 'default'}/${account === '' ? 'default' : account}`;
}
