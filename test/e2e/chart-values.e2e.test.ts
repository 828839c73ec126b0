// charts/sandbox-injector rendered by the real helm (no cluster): the Kubernetes versions it renders for
// (Chart.yaml's kubeVersion, and the pod ownership policy's API, served from 1.30 on), and the pod values of
// both Deployments (pull secrets, priority class, placement, pod annotations and labels).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHART,
  KUBE_VERSION,
  makeHelm,
  NAMESPACE,
  parseObjects,
  RELEASE,
  type Helm,
  type KubeObject,
} from './support/helm.js';
import { at } from './support/json.js';

const POLICY_API = 'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy';
const POLICY_OFF = ['--set', 'podOwnershipPolicy.enabled=false'];

let helm: Helm;

beforeAll(() => {
  helm = makeHelm();
});

afterAll(() => {
  helm?.dispose();
});

/** `helm template` of the chart as RELEASE in NAMESPACE with these flags; rejects with helm's stderr. */
async function template(flags: readonly string[]): Promise<KubeObject[]> {
  return parseObjects(await helm.runOk(['template', RELEASE, CHART, '--namespace', NAMESPACE, ...flags]));
}

/** helm's stderr for a `helm template` that must fail. */
async function refusal(flags: readonly string[]): Promise<string> {
  const result = await helm.run(['template', RELEASE, CHART, '--namespace', NAMESPACE, ...flags]);
  expect(result.code).not.toBe(0);
  return result.stderr;
}

const kinds = (objects: readonly KubeObject[]): string[] => objects.map((o) => o.kind);

describe('the Kubernetes versions the chart renders for', () => {
  it('refuses Kubernetes 1.28 (kubeVersion >=1.29.0-0: native sidecars)', async () => {
    expect(await refusal(['--kube-version', '1.28.15', ...POLICY_OFF])).toContain(
      'chart requires kubeVersion: >=1.29.0-0 which is incompatible with Kubernetes v1.28.15',
    );
  });

  it('refuses Kubernetes 1.29 with the pod ownership policy on (the default), saying to turn it off', async () => {
    const stderr = await refusal(['--kube-version', '1.29.0']);
    expect(stderr).toContain(
      'podOwnershipPolicy.enabled needs ValidatingAdmissionPolicy of admissionregistration.k8s.io/v1 (Kubernetes 1.30 or later), which this cluster (Kubernetes v1.29.0) does not serve: on Kubernetes 1.29, set podOwnershipPolicy.enabled=false',
    );
    // The API listed does not help: 1.29 never serves it, and the version decides without a cluster.
    expect(await refusal(['--kube-version', '1.29.0', '--api-versions', POLICY_API])).toContain(
      'set podOwnershipPolicy.enabled=false',
    );
  });

  it('renders on Kubernetes 1.29 with the policy off, without the policy', async () => {
    const objects = await template(['--kube-version', '1.29.0', ...POLICY_OFF]);
    expect(kinds(objects)).toContain('Deployment');
    expect(kinds(objects)).not.toContain('ValidatingAdmissionPolicy');
    expect(kinds(objects)).not.toContain('ValidatingAdmissionPolicyBinding');
  });

  it.each(['1.30.0', 'v1.30.2-eks-1234'])('renders the policy on Kubernetes %s', async (version) => {
    const objects = await template(['--kube-version', version]);
    expect(kinds(objects)).toEqual(
      expect.arrayContaining(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']),
    );
  });

  it('goes by the kinds listed when helm has them (as from a cluster): the policy only where its kind is served', async () => {
    // helm install lists every kind the cluster serves (v1/Pod among them); --api-versions plays that here.
    const withoutPolicy = ['--kube-version', '1.30.0', '--api-versions', 'v1/Pod'];
    expect(await refusal(withoutPolicy)).toContain('which this cluster (Kubernetes v1.30.0) does not serve');
    const objects = await template([...withoutPolicy, '--api-versions', POLICY_API]);
    expect(kinds(objects)).toContain('ValidatingAdmissionPolicy');
  });
});

const WEBHOOK = 'sandbox-injector';
const DELIVER_ENV = 'sandbox-injector-deliver-env';
const SELECTOR_LABELS = (component: string): Record<string, string> => ({
  'app.kubernetes.io/name': 'sandbox-injector',
  'app.kubernetes.io/instance': RELEASE,
  'app.kubernetes.io/component': component,
});
/** The pod fields these values set, each with a value a user would give. */
const POD_VALUES = {
  imagePullSecrets: [{ name: 'registry-credentials' }],
  priorityClassName: 'platform-critical',
  nodeSelector: { 'kubernetes.io/os': 'linux', pool: 'infra' },
  tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'infra', effect: 'NoSchedule' }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['infra'] }] }],
      },
    },
  },
} as const;
const POD_FIELDS = Object.keys(POD_VALUES) as (keyof typeof POD_VALUES)[];
const POD_METADATA = { podAnnotations: { 'example.com/owner': 'platform' }, podLabels: { team: 'platform' } };

/** `helm template` with these values (and deliver-env on), for the e2e suite's Kubernetes version. */
async function render(values: Record<string, unknown>): Promise<KubeObject[]> {
  return template(['--kube-version', KUBE_VERSION, ...helm.valuesArgs(values)]);
}

function podTemplate(objects: readonly KubeObject[], name: string): { metadata: unknown; spec: unknown } {
  const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === name);
  if (deployment === undefined) throw new Error(`Deployment ${name} not rendered`);
  return { metadata: at(deployment, 'spec', 'template', 'metadata'), spec: at(deployment, 'spec', 'template', 'spec') };
}

const withDeliverEnv = (deliverEnv: Record<string, unknown> = {}): Record<string, unknown> => ({
  deliverEnv: { enabled: true, ...deliverEnv },
});

describe("the Deployments' pod values", () => {
  it('by default: the webhook at priority system-cluster-critical, and nothing else of them on either', async () => {
    const objects = await render(withDeliverEnv());
    const webhook = podTemplate(objects, WEBHOOK);
    const deliver = podTemplate(objects, DELIVER_ENV);
    expect(at(webhook.spec, 'priorityClassName')).toBe('system-cluster-critical');
    expect(at(deliver.spec, 'priorityClassName')).toBeUndefined();
    for (const pod of [webhook, deliver]) {
      for (const field of ['imagePullSecrets', 'nodeSelector', 'tolerations', 'affinity']) {
        expect(at(pod.spec, field), field).toBeUndefined();
      }
      expect(at(pod.metadata, 'annotations')).toBeUndefined();
    }
    expect(at(webhook.metadata, 'labels')).toEqual(SELECTOR_LABELS('webhook'));
    expect(at(deliver.metadata, 'labels')).toEqual(SELECTOR_LABELS('deliver-env'));
  });

  it.each(POD_FIELDS)(
    '%s: on the webhook pods when set at the top, on deliver-env when set under deliverEnv',
    async (field) => {
      const value = POD_VALUES[field];
      const top = await render({ ...withDeliverEnv(), [field]: value });
      expect(at(podTemplate(top, WEBHOOK).spec, field)).toEqual(value);
      // deliver-env pulls the same image: it takes the webhook's pull secrets, and nothing else of the webhook's.
      const inherited = field === 'imagePullSecrets' ? value : undefined;
      expect(at(podTemplate(top, DELIVER_ENV).spec, field)).toEqual(inherited);

      const own = await render(withDeliverEnv({ [field]: value }));
      expect(at(podTemplate(own, DELIVER_ENV).spec, field)).toEqual(value);
      const webhookDefault = field === 'priorityClassName' ? 'system-cluster-critical' : undefined;
      expect(at(podTemplate(own, WEBHOOK).spec, field)).toEqual(webhookDefault);
    },
  );

  it("deliverEnv.imagePullSecrets replaces the webhook's; an empty priorityClassName leaves the webhook's out", async () => {
    const objects = await render({
      imagePullSecrets: [{ name: 'a' }],
      priorityClassName: '',
      ...withDeliverEnv({ imagePullSecrets: [{ name: 'b' }] }),
    });
    expect(at(podTemplate(objects, WEBHOOK).spec, 'imagePullSecrets')).toEqual([{ name: 'a' }]);
    expect(at(podTemplate(objects, DELIVER_ENV).spec, 'imagePullSecrets')).toEqual([{ name: 'b' }]);
    expect(at(podTemplate(objects, WEBHOOK).spec, 'priorityClassName')).toBeUndefined();
  });

  it('podAnnotations and podLabels: on the pods of their Deployment, beside the selector labels', async () => {
    const top = await render({ ...withDeliverEnv(), ...POD_METADATA });
    expect(at(podTemplate(top, WEBHOOK).metadata, 'annotations')).toEqual(POD_METADATA.podAnnotations);
    expect(at(podTemplate(top, WEBHOOK).metadata, 'labels')).toEqual({
      ...SELECTOR_LABELS('webhook'),
      ...POD_METADATA.podLabels,
    });
    expect(at(podTemplate(top, DELIVER_ENV).metadata, 'annotations')).toBeUndefined();
    expect(at(podTemplate(top, DELIVER_ENV).metadata, 'labels')).toEqual(SELECTOR_LABELS('deliver-env'));

    const own = await render(withDeliverEnv(POD_METADATA));
    expect(at(podTemplate(own, DELIVER_ENV).metadata, 'annotations')).toEqual(POD_METADATA.podAnnotations);
    expect(at(podTemplate(own, DELIVER_ENV).metadata, 'labels')).toEqual({
      ...SELECTOR_LABELS('deliver-env'),
      ...POD_METADATA.podLabels,
    });
    expect(at(podTemplate(own, WEBHOOK).metadata, 'annotations')).toBeUndefined();
    // The Deployment selects on its own labels only.
    const deployment = own.find((o) => o.kind === 'Deployment' && o.metadata.name === DELIVER_ENV);
    expect(at(deployment, 'spec', 'selector', 'matchLabels')).toEqual(SELECTOR_LABELS('deliver-env'));
  });

  it.each([
    ['imagePullSecrets', ['registry-credentials'], "at '/imagePullSecrets/0': got string, want object"],
    ['imagePullSecrets', [{ secret: 'x' }], "at '/imagePullSecrets/0'"],
    ['priorityClassName', 'Platform_Critical', "at '/priorityClassName'"],
    ['nodeSelector', { pool: true }, "at '/nodeSelector/pool': got boolean, want string"],
    ['tolerations', [{ key: 'a', operator: 'Matches' }], "at '/tolerations/0/operator'"],
    ['tolerations', { key: 'a' }, "at '/tolerations': got object, want array"],
    ['affinity', { nodeAfinity: {} }, "at '/affinity': additional properties 'nodeAfinity' not allowed"],
    ['podAnnotations', { a: 1 }, "at '/podAnnotations/a': got number, want string"],
    // helm names the wrong place for this one (another property); its words are right.
    ['podLabels', { 'app.kubernetes.io/component': 'x' }, "invalid propertyName 'app.kubernetes.io/component'"],
  ])('the schema refuses %s: %j', async (field, value, message) => {
    for (const [values, where] of [
      [{ [field]: value }, message],
      [withDeliverEnv({ [field]: value }), message.replace("at '/", "at '/deliverEnv/")],
    ] as const) {
      const stderr = await refusal(['--kube-version', KUBE_VERSION, ...helm.valuesArgs(values)]);
      expect(stderr).toContain("values don't meet the specifications of the schema");
      expect(stderr).toContain(where);
    }
  });
});
