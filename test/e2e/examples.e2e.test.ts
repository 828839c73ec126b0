// The Auto quick start's files (docs/quickstart-auto.md), on the real kube-apiserver and the real kubectl and
// helm: examples/auto installs the webhook, deliver-env and the pod ownership policy in one kustomize build or
// one values file, and the SandboxSet and Sandbox of examples/ are accepted as they are, under strict field
// validation, by stand-ins of upstream's CRDs.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { asYaml, kustomize, MANIFESTS, renderWithComponentDirs } from './support/components.js';
import { makeHelm, type Helm } from './support/helm.js';

const EXAMPLES = path.join(repoRoot, 'examples');
const FIXTURES = path.join(repoRoot, 'test', 'fixtures', 'e2e');
const NS = 'agents';

let cluster: TestCluster;
let helm: Helm;

beforeAll(async () => {
  cluster = await startCluster();
  helm = makeHelm(cluster.kubeconfigPath);
  await cluster.installSandboxCrd(path.join(FIXTURES, 'sandbox-crd-upstream.yaml'));
  await cluster.kubectlOk(['apply', '-f', path.join(FIXTURES, 'sandboxset-crd.yaml')]);
  await cluster.kubectlOk(['wait', '--for=condition=Established', 'crd/sandboxsets.agents.kruise.io', '--timeout=60s']);
  await cluster.ensureNamespace(NS);
  // A stand-in of upstream's namespace: the install puts the Role that reads the injection ConfigMap there.
  await cluster.ensureNamespace('sandbox-system');
}, 120_000);

afterAll(async () => {
  helm?.dispose();
  await cluster?.stop();
});

const names = (objects: readonly { kind: string; metadata: { name: string } }[]): string[] =>
  objects.map((o) => `${o.kind}/${o.metadata.name}`);

describe('examples/ for EnvVarsInjectionPolicy Auto', () => {
  it('examples/auto builds the webhook, deliver-env and the ownership policy, and the API server takes it', async () => {
    const objects = await kustomize(cluster.binDir, path.join(EXAMPLES, 'auto'));
    expect(names(objects)).toEqual(
      expect.arrayContaining([
        'Deployment/sandbox-injector',
        'Deployment/sandbox-injector-deliver-env',
        'MutatingWebhookConfiguration/sandbox-injector',
        'ValidatingAdmissionPolicy/sandbox-injector-pod-ownership',
        'ValidatingAdmissionPolicyBinding/sandbox-injector-pod-ownership',
      ]),
    );
    // The injection ConfigMap is upstream's: the example leaves it alone.
    expect(names(objects)).not.toContain('ConfigMap/sandbox-injection-config');
    const result = await cluster.kubectl(['apply', '--server-side', '--validate=strict', '-f', '-'], {
      input: asYaml(objects),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('examples/auto with components/injection-config adds the ConfigMap where upstream reads it', async () => {
    const objects = await renderWithComponentDirs(
      cluster.binDir,
      [path.join(MANIFESTS, 'components', 'injection-config')],
      path.join(EXAMPLES, 'auto'),
    );
    const configMaps = objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.name === 'sandbox-injection-config');
    expect(configMaps.map((o) => o.metadata.namespace)).toEqual(['sandbox-system']);
    expect(names(objects)).toContain('Deployment/sandbox-injector-deliver-env');
  });

  it('examples/auto/values.yaml renders deliver-env beside the webhook', async () => {
    const values = parseYaml(readFileSync(path.join(EXAMPLES, 'auto', 'values.yaml'), 'utf8')) as Record<
      string,
      unknown
    >;
    const objects = await helm.template(values);
    expect(names(objects)).toEqual(
      expect.arrayContaining([
        'Deployment/sandbox-injector',
        'Deployment/sandbox-injector-deliver-env',
        'ValidatingAdmissionPolicy/sandbox-injector-pod-ownership',
      ]),
    );
  });

  it.each(['sandboxset-auto.yaml', 'sandbox-auto.yaml'])(
    '%s is stored as written, its template asking for Auto',
    async (file) => {
      const written = parseYaml(readFileSync(path.join(EXAMPLES, file), 'utf8')) as {
        kind: string;
        metadata: { name: string };
        spec: { template: unknown; runtimes: unknown };
      };
      await cluster.kubectlOk([
        '-n',
        NS,
        'apply',
        '--server-side',
        '--validate=strict',
        '-f',
        path.join(EXAMPLES, file),
      ]);
      const stored = JSON.parse(
        await cluster.kubectlOk(['-n', NS, 'get', written.kind.toLowerCase(), written.metadata.name, '-o', 'json']),
      ) as { spec: { template: { metadata: { annotations: Record<string, string> } }; runtimes: unknown } };
      expect(stored.spec.template).toEqual(written.spec.template);
      expect(stored.spec.runtimes).toEqual([{ name: 'agent-runtime' }]);
      expect(stored.spec.template.metadata.annotations['agents.kruise.io/env-vars-injection-policy']).toBe('Auto');
    },
  );
});
