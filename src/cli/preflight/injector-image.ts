/**
 * Whether Sandbox namespaces can pull the injector's image: with Auto, the webhook adds the wrapper init
 * container, which runs that image in every wrapped Sandbox pod. The rule: an image whose registry is in
 * PUBLIC_REGISTRIES pulls anywhere; any other registry is private, and each Auto Sandbox then needs an image
 * pull secret, in its pod template or on its pod's service account.
 */
import { serveSettings } from './deployments.js';
import { type CheckResult, fail, type Json, listField, type PreflightFacts, pass } from './facts.js';
import { autoSandboxes, podServiceAccount, sandboxName, templateHasPullSecrets } from './sandboxes.js';

/** Registries that serve public images without credentials (docs/install.md lists the same). */
export const PUBLIC_REGISTRIES: readonly string[] = [
  'docker.io',
  'ghcr.io',
  'registry.k8s.io',
  'quay.io',
  'gcr.io',
  'mcr.microsoft.com',
  'public.ecr.aws',
];

/**
 * An image reference's registry, as the container runtime reads it: the first path component when it has a
 * `.` or a `:` or is `localhost`, else Docker Hub.
 */
export function registryOf(image: string): string {
  const slash = image.indexOf('/');
  if (slash < 0) return 'docker.io';
  const first = image.slice(0, slash);
  if (first === 'localhost' || first.includes('.') || first.includes(':'))
    return first === 'index.docker.io' ? 'docker.io' : first;
  return 'docker.io';
}

export const isPublicRegistry = (registry: string): boolean => PUBLIC_REGISTRIES.includes(registry);

/** The image Sandbox pods pull, where it comes from; or why there is none to check. */
export function wrapperImage(facts: Readonly<PreflightFacts>): { image: string; from: string } | { none: string } {
  if (facts.imageFlag !== undefined) return { image: facts.imageFlag, from: '--image' };
  const injector = facts.injector;
  if (injector === undefined || injector.read.state !== 'found')
    return { none: 'the webhook is not installed and no --image is given: not checked' };
  const reading = serveSettings(injector.read.object);
  if (!reading.ok) return { none: `Deployment ${injector.namespace}/${injector.name}: ${reading.problem}` };
  const { settings } = reading;
  if (settings.agentRuntimeHasWrapper || settings.wrapperImage === undefined)
    return { none: 'the webhook adds no wrapper init container: Sandbox pods pull no injector image' };
  return { image: settings.wrapperImage, from: `Deployment ${injector.namespace}/${injector.name}` };
}

/**
 * The service accounts (`NS/NAME`) the check needs read: those of Auto Sandboxes whose template names no pull
 * secret, and only when the image is private.
 */
export function serviceAccountsToRead(facts: Readonly<PreflightFacts>): string[] {
  const chosen = wrapperImage(facts);
  if ('none' in chosen || isPublicRegistry(registryOf(chosen.image))) return [];
  const sandboxes = facts.sandboxes.state === 'found' ? facts.sandboxes.object : [];
  const accounts = autoSandboxes(sandboxes)
    .filter((sandbox) => !templateHasPullSecrets(sandbox))
    .map(podServiceAccount);
  return [...new Set(accounts)];
}

function canPull(sandbox: Json, accounts: PreflightFacts['serviceAccounts']): boolean {
  if (templateHasPullSecrets(sandbox)) return true;
  const account = accounts.get(podServiceAccount(sandbox));
  return account?.state === 'found' && listField(account.object, 'imagePullSecrets').length > 0;
}

export function checkInjectorImage(facts: Readonly<PreflightFacts>): CheckResult {
  const name = 'injector-image';
  const chosen = wrapperImage(facts);
  if ('none' in chosen) return pass(name, chosen.none);
  const registry = registryOf(chosen.image);
  const shown = `image ${chosen.image} (${chosen.from})`;
  if (isPublicRegistry(registry)) return pass(name, `${shown} is on public registry ${registry}`);
  const hint = `Sandbox pods that use Auto pull it: give them an imagePullSecret for ${registry} (spec.template.spec.imagePullSecrets, or on their service account)`;
  const sandboxes = facts.sandboxes.state === 'found' ? autoSandboxes(facts.sandboxes.object) : [];
  const stuck = sandboxes.filter((sandbox) => !canPull(sandbox, facts.serviceAccounts));
  if (stuck.length === 0) {
    const checked = sandboxes.length === 0 ? 'no Sandbox uses Auto yet' : 'every Auto Sandbox has a pull secret';
    return pass(name, `${shown} is on private registry ${registry}; ${checked}. ${hint}`);
  }
  const names = stuck.slice(0, 3).map(sandboxName).join(', ');
  const more = stuck.length > 3 ? ` and ${stuck.length - 3} more` : '';
  return fail(
    name,
    `${shown} is on private registry ${registry}, and Auto Sandbox ${names}${more} has no image pull secret`,
    hint,
  );
}
