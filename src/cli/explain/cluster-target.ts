import { sandboxOwner } from '../../sandbox/owner.js';
import type { Pod } from '../../injection/index.js';
import { DEFAULT_CONFIG_NAME, DEFAULT_CONFIG_NAMESPACE, InjectionConfigStore } from '../../config/injection-config.js';
import { SANDBOX_API_VERSION, SANDBOX_PLURAL, type Sandbox } from '../../sandbox/api.js';
import { runtimesFromOwner, type SandboxLookup } from '../../admission/sandbox-runtimes.js';
import { UsageError } from '../command.js';
import { CliError, type CliIo, readInput } from '../io.js';
import { parsePod } from '../pod-review.js';
import { ClusterReads } from './cluster-reads.js';
import { judgePoolPod, poolOf } from '../../deliver/pools/pool-pods.js';
import type { ExplainInput, PoolPodReport, WebhookCheck } from './explanation.js';
import { podFromSandboxTemplate } from './sandbox-pod.js';
import { evaluateWebhooks, type WebhookEntry } from './webhook-match.js';

/** The flags of `explain` that choose the pod and the cluster's objects (src/cli/explain.ts parses them). */
export interface ClusterTargetFlags {
  sandbox?: string | undefined;
  pod?: string | undefined;
  filename?: string | undefined;
  'webhook-configuration': string;
  'config-namespace'?: string | undefined;
  'config-name'?: string | undefined;
  'allow-annotation-runtimes': boolean;
}

/** The label kube-apiserver puts on every namespace, so namespace selectors can name it. */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
const MWC_PATH = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';

type Target = Omit<ExplainInput, 'deps'> & { deps: Pick<ExplainInput['deps'], 'config' | 'selectRuntimes'> };

/** The target, and for `--sandbox` the Sandbox as read, with the reader, for deliver-env's side (delivery-reads.ts). */
export interface ClusterTarget {
  target: Target;
  sandbox: Sandbox | undefined;
  reads: ClusterReads;
}

/**
 * Everything explain needs from the cluster, each read once with a GET: the pod (stored, from a file, or the one
 * a Sandbox's controller would create), its namespace, the webhook configuration, the injection ConfigMap and,
 * through the server's own runtimesFromOwner, the owning Sandbox.
 */
export async function clusterTarget(kubeconfig: string, flags: ClusterTargetFlags, io: CliIo): Promise<ClusterTarget> {
  const reads = ClusterReads.fromFile(kubeconfig);
  const { pod, origin, notes, sandbox } = await targetPod(reads, flags, io);
  const namespace = pod.metadata.namespace ?? reads.defaultNamespace();
  const namespaceObject = await reads.get(`/api/v1/namespaces/${encodeURIComponent(namespace)}`);
  if (namespaceObject === undefined)
    notes.push(`namespace ${namespace} does not exist: its labels are taken to be only ${NAMESPACE_NAME_LABEL}`);
  const namespaceLabels = labelsOf(namespaceObject) ?? { [NAMESPACE_NAME_LABEL]: namespace };
  const webhook = await webhookCheck(reads, flags['webhook-configuration'], {
    pod: pod.metadata.labels ?? {},
    namespace: namespaceLabels,
  });

  const configNamespace = flags['config-namespace'] ?? DEFAULT_CONFIG_NAMESPACE;
  const configName = flags['config-name'] ?? DEFAULT_CONFIG_NAME;
  const configMap = await reads.get(
    `/api/v1/namespaces/${encodeURIComponent(configNamespace)}/configmaps/${encodeURIComponent(configName)}`,
  );
  const store = new InjectionConfigStore(`${configNamespace}/${configName}`);
  const report = store.update(configMap === undefined ? undefined : stringMap(configMap.data));
  if (report.invalidKeys.length > 0) {
    notes.push(
      'the ConfigMap is read once: a key that is bad now shows as invalid, though a running webhook that saw a valid version keeps using it',
    );
  }

  const lookup: SandboxLookup = async (ns, name, uid) => {
    const sandbox = (await reads.get(sandboxPath(ns, name))) as Sandbox | undefined;
    return sandbox?.metadata?.uid === uid ? sandbox : undefined;
  };
  const allowAnnotations = flags['allow-annotation-runtimes'];
  const target: Target = {
    pod,
    namespace,
    origin,
    notes,
    webhook,
    ...(sandbox === undefined ? {} : { poolPod: poolPodReport(sandbox, pod, store) }),
    deps: {
      config: () => store.snapshot(),
      selectRuntimes: (candidate, request) => runtimesFromOwner(candidate, request, lookup, allowAnnotations),
    },
  };
  return { target, sandbox, reads };
}

async function targetPod(
  reads: ClusterReads,
  flags: ClusterTargetFlags,
  io: CliIo,
): Promise<{ pod: Pod; origin: string; notes: string[]; sandbox?: Sandbox }> {
  if (flags.filename !== undefined) {
    return {
      pod: parsePod(await readInput(flags.filename, io), flags.filename),
      origin: `file ${flags.filename}`,
      notes: [],
    };
  }
  if (flags.pod !== undefined) {
    const [namespace, name] = namespacedName(flags.pod, '--pod');
    const pod = await reads.get(podPath(namespace, name));
    if (pod === undefined) throw new CliError(`pod ${namespace}/${name} not found`);
    return { pod: pod as unknown as Pod, origin: 'the stored pod, reviewed as if created now', notes: [] };
  }
  const [namespace, name] = namespacedName(flags.sandbox ?? '', '--sandbox');
  const sandbox = (await reads.get(sandboxPath(namespace, name))) as Sandbox | undefined;
  if (sandbox === undefined) throw new CliError(`Sandbox ${namespace}/${name} not found`);
  // The controller names the pod after its Sandbox; the one found there counts only if the Sandbox owns it.
  const existing = (await reads.get(podPath(namespace, name))) as Pod | undefined;
  if (existing !== undefined && sandboxOwner(existing)?.uid === sandbox.metadata?.uid) {
    return {
      pod: existing,
      origin: `the pod of Sandbox ${namespace}/${name}, reviewed as if created now`,
      notes: [],
      sandbox,
    };
  }
  return {
    sandbox,
    pod: podFromSandboxTemplate(sandbox),
    origin: `the pod Sandbox ${namespace}/${name}'s controller would create`,
    notes: [
      'the Sandbox has no pod yet: this one is built from spec.template; the controller injects spec.runtimes itself ' +
        'before creating it, so runtimes shown here as injected show as present on the real pod',
    ],
  };
}

/**
 * The state deliver-env gives the Sandbox's pod, by its own judgement, against the ConfigMap as read now. A
 * hostNetwork pod is judged too: the judgement reads no address.
 */
function poolPodReport(sandbox: Sandbox, pod: Pod, store: InjectionConfigStore): PoolPodReport {
  // The pod built from the template has no UID: the Sandbox has no pod to judge.
  const stored = pod.metadata.uid !== undefined && sandboxOwner(pod)?.uid === sandbox.metadata?.uid;
  const judgement = judgePoolPod(sandbox, stored ? [pod] : [], store.snapshot(), { allowHostNetwork: true });
  const pool = poolOf(sandbox)?.key;
  const state = judgement.kind === 'judged' ? judgement.state : 'not judged';
  return { state, reason: judgement.reason, ...(pool === undefined ? {} : { pool }) };
}

async function webhookCheck(
  reads: ClusterReads,
  name: string,
  labels: Parameters<typeof evaluateWebhooks>[1],
): Promise<WebhookCheck> {
  const configuration = await reads.get(`${MWC_PATH}/${encodeURIComponent(name)}`);
  if (configuration === undefined) return { state: 'not-installed', configuration: name };
  const webhooks = evaluateWebhooks((configuration.webhooks ?? []) as WebhookEntry[], labels);
  const notes = webhooks.length === 0 ? ['the configuration has no webhooks'] : [];
  return { state: 'checked', configuration: name, selected: webhooks.some((w) => w.selected), webhooks, notes };
}

function namespacedName(value: string, flag: string): [string, string] {
  const parts = value.split('/');
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '')
    throw new UsageError(`${flag}: "${value}" is not NAMESPACE/NAME`);
  return [parts[0] ?? '', parts[1] ?? ''];
}

const podPath = (namespace: string, name: string): string =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
const sandboxPath = (namespace: string, name: string): string =>
  `/apis/${SANDBOX_API_VERSION}/namespaces/${encodeURIComponent(namespace)}/${SANDBOX_PLURAL}/${encodeURIComponent(name)}`;

function labelsOf(object: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (object === undefined) return undefined;
  return stringMap((object.metadata as { labels?: unknown } | undefined)?.labels);
}

function stringMap(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object') return {};
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}
