/**
 * The checks of what the cluster and OpenKruise Agents bring: the Kubernetes version, the Sandbox CRD, and the
 * injection ConfigMap read by the webhook's own parser. Pure: facts in, one result out.
 */
import { SANDBOX_GROUP, SANDBOX_PLURAL, SANDBOX_VERSION } from '../../sandbox/api.js';
import { parseRuntimeConfig } from '../../config/injection-config.js';
import {
  type CheckResult,
  fail,
  field,
  listField,
  placeName,
  type PreflightFacts,
  pass,
  stringField,
} from './facts.js';

/** Native sidecars (`restartPolicy: Always` on an init container), which the injected runtimes are, are on from 1.29. */
export const MIN_MINOR = 29;

export const SANDBOX_CRD_NAME = `${SANDBOX_PLURAL}.${SANDBOX_GROUP}`;

export function checkKubernetesVersion({ version }: Pick<PreflightFacts, 'version'>): CheckResult {
  const name = 'kubernetes-version';
  if (version.state !== 'found') {
    const why = version.state === 'absent' ? 'the API server has no /version' : version.error;
    return fail(
      name,
      `cannot read the Kubernetes version: ${why}`,
      'check --kubeconfig and that the API server answers',
    );
  }
  const major = Number.parseInt(stringField(version.object, 'major') ?? '', 10);
  // A minor may carry a suffix, as managed clusters report it ("29+").
  const minor = Number.parseInt(stringField(version.object, 'minor') ?? '', 10);
  const shown = stringField(version.object, 'gitVersion') ?? `${major}.${minor}`;
  if (Number.isNaN(major) || Number.isNaN(minor))
    return fail(name, `the API server reports no version number (${shown})`, 'check the API server');
  if (major > 1 || minor >= MIN_MINOR) return pass(name, `Kubernetes ${shown} (1.${MIN_MINOR} or later)`);
  return fail(
    name,
    `Kubernetes ${shown} is older than 1.${MIN_MINOR}: the injected runtimes are native sidecars`,
    `upgrade the cluster to 1.${MIN_MINOR} or later`,
  );
}

export function checkSandboxCrd({ crd }: Pick<PreflightFacts, 'crd'>): CheckResult {
  const name = 'sandbox-crd';
  const install = 'install OpenKruise Agents (its CRDs) first';
  if (crd.state === 'unreadable') return fail(name, `cannot read CRD ${SANDBOX_CRD_NAME}: ${crd.error}`, install);
  if (crd.state === 'absent') return fail(name, `CRD ${SANDBOX_CRD_NAME} is not installed`, install);
  const versions = listField(crd.object, 'spec', 'versions');
  const served = versions.some((v) => field(v, 'name') === SANDBOX_VERSION && field(v, 'served') === true);
  if (!served) {
    const listed = versions.map((v) => stringField(v, 'name') ?? '?').join(', ') || 'none';
    return fail(
      name,
      `CRD ${SANDBOX_CRD_NAME} does not serve ${SANDBOX_VERSION} (versions: ${listed})`,
      `install an OpenKruise Agents release that serves ${SANDBOX_GROUP}/${SANDBOX_VERSION}`,
    );
  }
  const established = listField(crd.object, 'status', 'conditions').some(
    (c) => field(c, 'type') === 'Established' && field(c, 'status') === 'True',
  );
  if (!established)
    return fail(name, `CRD ${SANDBOX_CRD_NAME} is not Established yet`, 'wait for it, or read its status conditions');
  return pass(name, `CRD ${SANDBOX_CRD_NAME} serves ${SANDBOX_VERSION}`);
}

/** Every key of the ConfigMap through the webhook's parser; the keys that parse are the runtimes it defines. */
export function checkInjectionConfig({ configMap }: Pick<PreflightFacts, 'configMap'>): CheckResult {
  const name = 'injection-config';
  const where = `ConfigMap ${placeName(configMap)}`;
  const { read } = configMap;
  if (read.state === 'unreadable') return fail(name, `cannot read ${where}: ${read.error}`, 'check your RBAC');
  if (read.state === 'absent') {
    return fail(
      name,
      `${where} does not exist: nothing is injected`,
      'OpenKruise Agents creates it; on a cluster without one, add the component manifests/components/injection-config (or give --config-namespace, --config-name)',
    );
  }
  const data = field(read.object, 'data');
  const entries = data !== null && typeof data === 'object' ? Object.entries(data) : [];
  const runtimes: string[] = [];
  const problems: string[] = [];
  for (const [key, text] of entries) {
    if (typeof text !== 'string') continue;
    if (text.trim() === '') {
      problems.push(`key ${key} is empty (read as missing)`);
      continue;
    }
    const parsed = parseRuntimeConfig(text);
    if (parsed.ok) runtimes.push(key);
    else problems.push(`key ${key}: ${parsed.message}`);
  }
  const defined = runtimes.length === 0 ? 'no runtime' : `runtimes ${runtimes.join(', ')}`;
  if (problems.length > 0) {
    return fail(
      name,
      `${where}: ${problems.join('; ')} (${defined} parse)`,
      `fix the key: kubectl -n ${configMap.namespace} edit configmap ${configMap.name}`,
    );
  }
  if (runtimes.length === 0)
    return fail(name, `${where} defines no runtime`, 'add one key per runtime (docs/install.md)');
  return pass(name, `${where}: ${defined}`);
}
