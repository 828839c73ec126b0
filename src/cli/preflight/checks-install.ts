/**
 * The checks of our own install against upstream's: the trusted creators against the account upstream's
 * controller runs as, the webhook configuration and its Service's endpoints, and deliver-env's Lease when Auto
 * is in use. Pure: facts in, one result out.
 */
import { DENIALS } from '../../errors/index.js';
import { isTrustedCreator, readTrustedCreators } from '../../sandbox/trusted-creators.js';
import { controllerUser, INSTALL_TRUSTED_CREATORS, serveSettings } from './deployments.js';
import {
  type CheckResult,
  fail,
  field,
  type Json,
  listField,
  type Place,
  placeName,
  type PreflightFacts,
  pass,
  type Read,
  stringField,
} from './facts.js';
import { autoSandboxes, sandboxName } from './sandboxes.js';

type Facts = Readonly<PreflightFacts>;

/** Which list serve is (or will be) given, and where it comes from; a problem when it cannot be known. */
function trustedList(facts: Facts): { list: string | undefined; from: string } | { problem: string } {
  if (facts.trustedCreatorsFlag !== undefined) return { list: facts.trustedCreatorsFlag, from: '--trusted-creators' };
  const injector = facts.injector;
  if (injector === undefined || injector.read.state === 'absent')
    return { list: INSTALL_TRUSTED_CREATORS, from: "the install's default (the webhook is not installed)" };
  if (injector.read.state === 'unreadable')
    return { problem: `cannot read Deployment ${placeName(injector)}: ${injector.read.error}` };
  const reading = serveSettings(injector.read.object);
  if (!reading.ok) return { problem: `Deployment ${placeName(injector)}: ${reading.problem}` };
  return { list: reading.settings.trustedCreators, from: `Deployment ${placeName(injector)}` };
}

export function checkTrustedCreators(facts: Facts): CheckResult {
  const name = 'trusted-creators';
  const { controller } = facts;
  const where = `Deployment ${placeName(controller)}`;
  const flags = 'or give --controller-namespace and --controller-deployment';
  if (controller.read.state === 'unreadable')
    return fail(name, `cannot read ${where}: ${controller.read.error}`, `check your RBAC, ${flags}`);
  if (controller.read.state === 'absent')
    return fail(name, `upstream's controller ${where} not found`, `install OpenKruise Agents, ${flags}`);
  const user = controllerUser(controller.read.object, controller.namespace);
  const chosen = trustedList(facts);
  if ('problem' in chosen) return fail(name, chosen.problem, 'fix the Deployment, or give --trusted-creators');
  if (chosen.list === undefined)
    return pass(name, `${chosen.from} trusts every creator (no --trusted-creators), ${user.username} included`);
  const reading = readTrustedCreators(chosen.list);
  if (!reading.ok) return fail(name, `${chosen.from}: ${reading.problem}`, 'fix the list');
  if (isTrustedCreator(reading.creators, user))
    return pass(name, `${user.username} (${where}) is trusted by ${chosen.from}`);
  return fail(
    name,
    `${user.username} (${where}) is not in ${JSON.stringify(chosen.list)} from ${chosen.from}: every Sandbox pod would be denied (${DENIALS.creatorUntrusted.code}, 403)`,
    `give serve --trusted-creators=${user.username} (chart: trustedCreators)`,
  );
}

/** The Service the configuration's first webhook calls; undefined when it calls a URL or has no webhook. */
export function webhookService(configuration: Json): Place | undefined {
  for (const webhook of listField(configuration, 'webhooks')) {
    const service = field(webhook, 'clientConfig', 'service');
    const namespace = stringField(service, 'namespace');
    const name = stringField(service, 'name');
    if (namespace !== undefined && name !== undefined) return { namespace, name };
  }
  return undefined;
}

const INSTALL_FIX = 'install the webhook (docs/install.md), or give --webhook-config-name';

export function checkWebhookConfiguration({ webhookConfiguration }: Facts): CheckResult {
  const name = 'webhook-configuration';
  const where = `MutatingWebhookConfiguration ${webhookConfiguration.name}`;
  const { read } = webhookConfiguration;
  if (read.state === 'unreadable') return fail(name, `cannot read ${where}: ${read.error}`, 'check your RBAC');
  if (read.state === 'absent') return fail(name, `${where} is not installed`, INSTALL_FIX);
  const webhooks = listField(read.object, 'webhooks');
  if (webhooks.length === 0) return fail(name, `${where} has no webhooks`, INSTALL_FIX);
  const missing = webhooks
    .filter((webhook) => (stringField(webhook, 'clientConfig', 'caBundle') ?? '') === '')
    .map((webhook) => stringField(webhook, 'name') ?? '?');
  if (missing.length > 0) {
    return fail(
      name,
      `${where}: webhook ${missing.join(', ')} has no caBundle: kube-apiserver cannot trust the webhook`,
      "self-managed certificates: the webhook fills it as it starts (read its log); cert-manager: check the CA injector's annotation",
    );
  }
  return pass(name, `${where}: ${webhooks.length} webhook(s), each with a caBundle`);
}

/** An endpoint is ready unless its condition says otherwise (nil means ready, as for EndpointSlices). */
function readyEndpoints(slices: readonly Json[]): number {
  return slices
    .flatMap((slice) => listField(slice, 'endpoints'))
    .filter((endpoint) => field(endpoint, 'conditions', 'ready') !== false)
    .filter((endpoint) => listField(endpoint, 'addresses').length > 0).length;
}

export function checkWebhookEndpoints({ webhookConfiguration, endpointSlices }: Facts): CheckResult {
  const name = 'webhook-endpoints';
  if (webhookConfiguration.read.state !== 'found')
    return fail(name, `no MutatingWebhookConfiguration ${webhookConfiguration.name}: no Service to check`, INSTALL_FIX);
  if (endpointSlices === undefined)
    return pass(name, 'the webhook is called by URL (clientConfig.url): no Service to check');
  const where = `Service ${placeName(endpointSlices)}`;
  const { read } = endpointSlices;
  if (read.state === 'unreadable')
    return fail(name, `cannot read the EndpointSlices of ${where}: ${read.error}`, 'check your RBAC');
  const ready = read.state === 'found' ? readyEndpoints(read.object) : 0;
  if (ready === 0) {
    return fail(
      name,
      `${where} has no ready endpoint: with failurePolicy Fail, every Sandbox pod is refused`,
      `check the webhook's pods: kubectl -n ${endpointSlices.namespace} get pods,endpointslices`,
    );
  }
  return pass(name, `${where}: ${ready} ready endpoint(s)`);
}

/** Why deliver-env is needed, or undefined when nothing uses Auto; a problem when the Sandboxes cannot be read. */
function autoInUse(facts: Facts): { why: string | undefined } | { problem: string } {
  if (facts.autoFlag) return { why: '--auto' };
  const { sandboxes } = facts;
  if (sandboxes.state === 'unreadable') return { problem: `cannot list Sandboxes: ${sandboxes.error}` };
  const auto = autoSandboxes(sandboxes.state === 'found' ? sandboxes.object : []);
  const first = auto[0];
  if (first === undefined) return { why: undefined };
  return { why: `${auto.length} Sandbox(es) use Auto, ${sandboxName(first)} first` };
}

/** The Lease's holder and when its term ends (ms since the epoch), or why it is not held. */
export function leaseTerm(lease: Json): { holder: string; endsAt: number } | { problem: string } {
  const holder = stringField(lease, 'spec', 'holderIdentity') ?? '';
  if (holder === '') return { problem: 'has no holder' };
  const renewed = stringField(lease, 'spec', 'renewTime') ?? stringField(lease, 'spec', 'acquireTime');
  const seconds = field(lease, 'spec', 'leaseDurationSeconds');
  const at = renewed === undefined ? Number.NaN : Date.parse(renewed);
  if (Number.isNaN(at) || typeof seconds !== 'number') return { problem: `(holder ${holder}) has no renewal time` };
  return { holder, endsAt: at + seconds * 1000 };
}

export function checkDeliverEnv(facts: Facts): CheckResult {
  const name = 'deliver-env';
  const use = autoInUse(facts);
  if ('problem' in use) return fail(name, use.problem, 'check your RBAC, or give --auto');
  if (use.why === undefined) return pass(name, 'no Sandbox uses Auto: deliver-env is not needed (--auto checks it)');
  const { lease } = facts;
  const where = `Lease ${placeName(lease)}`;
  const install =
    'install deliver-env (manifests/components/deliver-env, or the chart), or give --lease-namespace and --lease-name';
  const read: Read = lease.read;
  if (read.state === 'unreadable') return fail(name, `cannot read ${where}: ${read.error}`, 'check your RBAC');
  if (read.state === 'absent')
    return fail(name, `${use.why}, and ${where} does not exist: deliver-env has never run`, install);
  const term = leaseTerm(read.object);
  const logs = `read deliver-env's pods and logs in namespace ${lease.namespace}`;
  if ('problem' in term) return fail(name, `${use.why}, and ${where} ${term.problem}: no replica delivers`, logs);
  if (term.endsAt < facts.now) {
    const ago = Math.round((facts.now - term.endsAt) / 1000);
    return fail(name, `${use.why}, and ${where} held by ${term.holder} expired ${ago}s ago: no replica delivers`, logs);
  }
  return pass(name, `${use.why}; ${where} is held by ${term.holder}`);
}
