/**
 * preflight's reads: each object once, with a GET through the kubeconfig (explain's ClusterReads). A read that
 * fails is kept as a fact (`unreadable`), so a missing permission fails only the checks that need it; only an
 * API server that does not answer /version stops the command.
 */
import { SANDBOX_API_VERSION, SANDBOX_PLURAL } from '../../sandbox/api.js';
import type { Clock } from '../../time/clock.js';
import { errorMessage } from '../../errors/error-message.js';
import { CliError } from '../io.js';
import { ClusterReads } from '../explain/cluster-reads.js';
import { SANDBOX_CRD_NAME } from './checks-platform.js';
import { webhookService } from './checks-install.js';
import { type Json, listField, type Place, type PreflightFacts, type Read, stringField } from './facts.js';
import { serviceAccountsToRead } from './injector-image.js';
import type { PreflightOptions } from './options.js';

/** One page of a list; a cluster with more Sandboxes is read page by page. */
const PAGE = 500;

const enc = encodeURIComponent;
const namespaced = (group: string, { namespace, name }: Place, plural: string): string =>
  `${group}/namespaces/${enc(namespace)}/${plural}/${enc(name)}`;

async function attempt(reads: ClusterReads, path: string): Promise<Read> {
  try {
    const object = await reads.get(path);
    return object === undefined ? { state: 'absent' } : { state: 'found', object };
  } catch (error) {
    return { state: 'unreadable', error: errorMessage(error) };
  }
}

/** Every item of a list, page by page; a 404 (no such resource) is an absent list. */
async function list(reads: ClusterReads, path: string): Promise<Read<Json[]>> {
  const items: Json[] = [];
  let next: string | undefined = '';
  while (next !== undefined) {
    const query = `${path.includes('?') ? '&' : '?'}limit=${PAGE}${next === '' ? '' : `&continue=${enc(next)}`}`;
    const page = await attempt(reads, path + query);
    if (page.state !== 'found') return page;
    items.push(...(listField(page.object, 'items') as Json[]));
    const token = stringField(page.object, 'metadata', 'continue');
    next = token === undefined || token === '' ? undefined : token;
  }
  return { state: 'found', object: items };
}

export async function readFacts(options: Readonly<PreflightOptions>, clock: Clock): Promise<PreflightFacts> {
  const reads = ClusterReads.fromFile(options.kubeconfig);
  const version = await attempt(reads, '/version');
  if (version.state === 'unreadable') throw new CliError(`cannot reach the API server: ${version.error}`);
  const configMap = { namespace: options.configNamespace, name: options.configName };
  const controller = { namespace: options.controllerNamespace, name: options.controllerDeployment };
  const lease = { namespace: options.leaseNamespace, name: options.leaseName };
  const webhookConfiguration = {
    name: options.webhookConfigName,
    read: await attempt(
      reads,
      `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${enc(options.webhookConfigName)}`,
    ),
  };
  const service =
    webhookConfiguration.read.state === 'found' ? webhookService(webhookConfiguration.read.object) : undefined;
  const injectorNamespace = options.injectorNamespace ?? service?.namespace;
  const injector =
    injectorNamespace === undefined ? undefined : { namespace: injectorNamespace, name: options.injectorDeployment };
  const slices = (place: Place): string =>
    `/apis/discovery.k8s.io/v1/namespaces/${enc(place.namespace)}/endpointslices?labelSelector=${enc(`kubernetes.io/service-name=${place.name}`)}`;

  const facts: PreflightFacts = {
    now: 0,
    version,
    crd: await attempt(reads, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${SANDBOX_CRD_NAME}`),
    configMap: { ...configMap, read: await attempt(reads, namespaced('/api/v1', configMap, 'configmaps')) },
    controller: { ...controller, read: await attempt(reads, namespaced('/apis/apps/v1', controller, 'deployments')) },
    trustedCreatorsFlag: options.trustedCreators,
    webhookConfiguration,
    injector:
      injector === undefined
        ? undefined
        : { ...injector, read: await attempt(reads, namespaced('/apis/apps/v1', injector, 'deployments')) },
    endpointSlices: service === undefined ? undefined : { ...service, read: await list(reads, slices(service)) },
    sandboxes: await list(reads, `/apis/${SANDBOX_API_VERSION}/${SANDBOX_PLURAL}`),
    autoFlag: options.auto,
    lease: { ...lease, read: await attempt(reads, namespaced('/apis/coordination.k8s.io/v1', lease, 'leases')) },
    imageFlag: options.image,
    serviceAccounts: new Map(),
    beforeInstall: options.beforeInstall,
  };
  const accounts = new Map<string, Read>();
  for (const key of serviceAccountsToRead(facts)) {
    const [namespace = '', name = ''] = key.split('/');
    accounts.set(key, await attempt(reads, namespaced('/api/v1', { namespace, name }, 'serviceaccounts')));
  }
  // The Lease is judged against the time right after the reads.
  return { ...facts, serviceAccounts: accounts, now: clock.now() };
}
