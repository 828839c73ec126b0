// charts/sandbox-injector rendered by the real helm (no cluster): the Kubernetes versions it renders for
// (Chart.yaml's kubeVersion, and the pod ownership policy's API, served from 1.30 on).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHART, makeHelm, NAMESPACE, parseObjects, RELEASE, type Helm, type KubeObject } from './support/helm.js';

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
