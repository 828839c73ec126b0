// charts/sandbox-injector with the real helm (test/e2e/cluster/build.sh helm) on a real kube-apiserver:
//   - helm lint, and helm template with several value sets, each checked for what its values asked;
//   - the default render (release sandbox-injector in sandbox-injector-system) against `kubectl kustomize manifests/`,
//     cert-manager mode against manifests/overlays/cert-manager, and the components, object by object, Helm's
//     standard labels aside (manifests/ is the source of truth; the chart follows it, its README.md);
//   - another release in another namespace: every name and namespace follows the release;
//   - helm install of another release into another namespace, --wait, a Sandbox pod injected through it by a
//     `serve` process running the Deployment's self-managed flags as the chart's ServiceAccount, and helm
//     uninstall, which must leave nothing behind and delete the MutatingWebhookConfiguration before the Service;
//   - `helm template | kubectl apply -f -`: one webhook configuration, and it works.
//
// This cluster has no kubelet and no controllers. The chart's webhook configuration is pointed at the test's
// own `serve` processes (value webhook.url), and the Deployment is installed with 0 replicas, for which the test
// plays the Deployment controller (support/deployment-controller.ts) so that `--wait` has something true to
// wait for. The order of the uninstall is read from the API server's audit log.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { auditFlags, readAuditEvents } from './support/audit-log.js';
import { resolveBinDir, toolPath } from './support/binaries.js';
import { byKey, isHook, objectKey, releaseObjects, withoutHelmLabels } from './support/chart-objects.js';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { renderWithComponents } from './support/components.js';
import { ALERTS } from './support/promtool.js';
import { waitUntil } from '../support/wait-until.js';
import { settleScaledToZero } from './support/deployment-controller.js';
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
import { serviceAccountIdentity } from './support/identities.js';
import { at } from './support/json.js';
import { podFromSandbox, type SandboxObject } from './support/sandbox-controller.js';
import { freePort, startWebhookProcess, type WebhookProcess } from './support/webhook-process.js';

const NS = NAMESPACE;
// Upstream's (OpenKruise Agents') namespace, where the injection ConfigMap is read (config.namespace).
const CONFIG_NS = 'sandbox-system';
const INJECTION_CONFIG = path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml');
const PODS_NS = 'e2e-helm';
/** The release another team would install: another name, another namespace. */
const OTHER = { release: 'agents', namespace: 'team-a', fullname: 'agents-sandbox-injector' } as const;
const CERT_MANAGER = path.join(repoRoot, 'manifests', 'overlays', 'cert-manager');
const STATUS = 'agents.kruise.io/runtime-injection-status';
const COMMON_LABELS = {
  'app.kubernetes.io/name': 'sandbox-injector',
  'app.kubernetes.io/part-of': 'openkruise-agents',
};
/**
 * The one object of manifests/ the chart leaves to Helm: the release's namespace
 * (charts/sandbox-injector/README.md, "Names and namespaces").
 */
const RELEASE_NAMESPACE = `Namespace//${NS}`;
/** The chart's default trusted creator, the Sandbox controller's service account. */
const TRUSTED_CONTROLLER = 'system:serviceaccount:sandbox-system:sandbox-controller-manager';

/** The value sets the tests render; each is also linted. */
const VALUE_SETS: Record<string, Record<string, unknown>> = {
  defaults: {},
  certManager: { certificates: { mode: 'cert-manager' } },
  withConfig: { config: { create: true } },
  certManagerOwnIssuer: {
    certificates: { mode: 'cert-manager', certManagerIssuer: { name: 'corp-ca', kind: 'ClusterIssuer' } },
  },
  scaledAndMonitored: {
    autoscaling: { enabled: true },
    monitoring: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
  },
  components: { autoscaling: { enabled: true }, monitoring: { enabled: true } },
  configElsewhere: { config: { create: false, name: 'team-runtimes', namespace: 'platform-config' } },
  everythingChanged: {
    image: { repository: 'registry.example.com/sandbox-injector', tag: '1.2.3', pullPolicy: 'Always' },
    wrapperImage: 'registry.example.com/wrapper:9',
    replicas: 3,
    resources: { requests: { cpu: '250m', memory: '200Mi' }, limits: { memory: '512Mi' } },
    webhook: {
      failurePolicy: 'Ignore',
      timeoutSeconds: 10,
      objectSelector: { matchExpressions: [{ key: 'agents.kruise.io/created-by', operator: 'Exists' }] },
      namespaceSelector: { matchLabels: { 'sandboxes.example.com/enabled': 'true' } },
    },
    trustedCreators: ['group:system:serviceaccounts:sandbox-system', 'user:ci'],
    postStartConflict: 'merge',
    logLevel: 'debug',
    extraArgs: ['--allow-annotation-runtimes', '--cert-poll=30s'],
    // Maps merge with the defaults: null drops a default runtime; a new one may be a map.
    config: {
      create: true,
      runtimes: {
        csi: null,
        'agent-runtime': '{"mainContainer": {"name": ""}}\n',
        gpu: { mainContainer: { name: '', env: [{ name: 'A', value: 'b' }] } },
      },
    },
  },
};

let cluster: TestCluster;
let helm: Helm;
let auditDir: string;
let auditLog: string;
let kustomized: KubeObject[];
let kustomizedCertManager: KubeObject[];
let kustomizedWithComponents: KubeObject[];
const rendered = new Map<string, KubeObject[]>();

function render(set: string): KubeObject[] {
  const objects = rendered.get(set);
  if (objects === undefined) throw new Error(`value set ${set} not rendered`);
  return objects;
}

function find(objects: readonly KubeObject[], kind: string, name = 'sandbox-injector'): KubeObject {
  const found = objects.filter((o) => !isHook(o)).find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`${kind}/${name} not rendered`);
  return found;
}

/** The one Deployment of a render, whatever the release called it. */
function deploymentOf(objects: readonly KubeObject[]): KubeObject {
  const deployments = objects.filter((o) => o.kind === 'Deployment');
  if (deployments.length !== 1) throw new Error(`${deployments.length} Deployments rendered`);
  return deployments[0] as KubeObject;
}

const container = (objects: readonly KubeObject[]): unknown =>
  at(deploymentOf(objects), 'spec', 'template', 'spec', 'containers', 0);
const args = (objects: readonly KubeObject[]): unknown => at(container(objects), 'args');
const kindsOf = (objects: readonly KubeObject[]): string[] => [...new Set(objects.map((o) => o.kind))].sort();

beforeAll(async () => {
  auditDir = mkdtempSync(path.join(tmpdir(), 'si-e2e-helm-audit-'));
  const audit = auditFlags(auditDir);
  auditLog = audit.logPath;
  cluster = await startCluster({ apiserverArgs: audit.flags });
  helm = makeHelm(cluster.kubeconfigPath);
  // The chart turns the pod ownership policy on by default; kustomize adds it as a component.
  kustomized = await renderWithComponents(resolveBinDir(), ['pod-ownership-policy']);
  kustomizedCertManager = await renderWithComponents(resolveBinDir(), ['pod-ownership-policy'], CERT_MANAGER);
  kustomizedWithComponents = await renderWithComponents(resolveBinDir(), [
    'autoscaling',
    'monitoring',
    'pod-ownership-policy',
  ]);
  for (const [name, values] of Object.entries(VALUE_SETS)) rendered.set(name, await helm.template(values));
  await cluster.installSandboxCrd();
  await cluster.ensureNamespace(PODS_NS);
  // Where the injection ConfigMap is (config.namespace): the Sandbox controller's namespace, made beforehand,
  // and the release's own.
  await cluster.ensureNamespace(CONFIG_NS);
  await cluster.ensureNamespace(NS);
});

afterAll(async () => {
  await cluster?.stop();
  helm?.dispose();
  if (auditDir !== undefined) rmSync(auditDir, { recursive: true, force: true });
});

describe('helm lint', () => {
  it.each(Object.keys(VALUE_SETS))('passes with --strict for the value set %s', async (set) => {
    const result = await helm.run([
      'lint',
      CHART,
      '--strict',
      '--namespace',
      NS,
      ...helm.valuesArgs(VALUE_SETS[set] ?? {}),
    ]);
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(result.code).toBe(0);
  });
});

/** kustomize's objects by key, without the release's Namespace, which the chart does not make. */
function withoutReleaseNamespace(objects: readonly KubeObject[]): Map<string, KubeObject> {
  const map = byKey(objects);
  expect(map.has(RELEASE_NAMESPACE)).toBe(true);
  map.delete(RELEASE_NAMESPACE);
  return map;
}

describe('the default values, as the release sandbox-injector in sandbox-system, render kubectl kustomize manifests/ with components/pod-ownership-policy', () => {
  it('object by object, apart from Helm standard labels and the release namespace', () => {
    const chart = releaseObjects(render('defaults'));
    const kustomize = withoutReleaseNamespace(kustomized);
    expect([...chart.keys()].sort()).toEqual([...kustomize.keys()].sort());
    for (const [key, object] of kustomize) expect(chart.get(key), key).toEqual(object);
  });

  it("puts Helm's standard labels on every object, and the same pod labels and selectors as manifests/", () => {
    for (const object of render('defaults')) {
      expect(object.metadata.labels, objectKey(object)).toMatchObject({
        ...COMMON_LABELS,
        'helm.sh/chart': 'sandbox-injector-0.1.0',
        'app.kubernetes.io/managed-by': 'Helm',
        'app.kubernetes.io/instance': RELEASE,
        'app.kubernetes.io/version': '0.1.0',
      });
    }
    // The pods carry manifests/' labels and the release; Helm's other labels stay off them (a chart upgrade must
    // not change the pod template or a selector), and everything that selects them selects all three.
    const objects = render('defaults');
    const podLabels = {
      'app.kubernetes.io/name': 'sandbox-injector',
      'app.kubernetes.io/instance': RELEASE,
      'app.kubernetes.io/component': 'webhook',
    };
    expect(at(find(objects, 'Deployment'), 'spec', 'template', 'metadata', 'labels')).toEqual(podLabels);
    expect(at(find(objects, 'Deployment'), 'spec', 'selector')).toEqual({ matchLabels: podLabels });
    expect(at(find(objects, 'PodDisruptionBudget'), 'spec', 'selector')).toEqual({ matchLabels: podLabels });
    expect(at(find(objects, 'Service'), 'spec', 'selector')).toEqual(podLabels);
    const spread = at(
      find(objects, 'Deployment'),
      'spec',
      'template',
      'spec',
      'topologySpreadConstraints',
    ) as unknown[];
    for (const constraint of spread) expect(at(constraint, 'labelSelector')).toEqual({ matchLabels: podLabels });
  });

  it('renders no hook offline: one MutatingWebhookConfiguration, the working one', async () => {
    const objects = render('defaults');
    expect(objects.filter(isHook)).toEqual([]);
    const configs = objects.filter((o) => o.kind === 'MutatingWebhookConfiguration');
    expect(configs.map((c) => (c.webhooks as unknown[]).length)).toEqual([1]);
    // The hook is in the chart: a render that reaches the cluster (as install, upgrade and rollback do) has it.
    const online = parseObjects(await helm.templateText({}, {}, ['--dry-run=server']));
    expect(
      online.filter(isHook).map((h) => ({
        kind: h.kind,
        name: h.metadata.name,
        annotations: h.metadata.annotations,
        webhooks: h.webhooks,
      })),
    ).toEqual([
      {
        kind: 'MutatingWebhookConfiguration',
        name: 'sandbox-injector',
        annotations: {
          'helm.sh/hook': 'pre-delete',
          'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
        },
        webhooks: [],
      },
    ]);
    // Everything else is the same render.
    expect(releaseObjects(online)).toEqual(releaseObjects(objects));
  });

  it('fails the comparison when one field differs (the check can fail)', () => {
    const chart = releaseObjects(render('defaults'));
    const changed = structuredClone(kustomized);
    const deployment = changed.find((o) => o.kind === 'Deployment');
    if (deployment === undefined) throw new Error('no Deployment');
    (at(deployment, 'spec') as Record<string, unknown>).revisionHistoryLimit = 6;
    expect(chart.get(objectKey(deployment))).not.toEqual(deployment);
  });
});

describe('certificates.mode=cert-manager renders kubectl kustomize manifests/overlays/cert-manager (with components/pod-ownership-policy)', () => {
  // The overlay's own objects get no labels: its kustomization has no `labels:` (manifests/ is read-only to the
  // chart's work; reported). The chart labels them like every other object. Listed here so that this test
  // fails, and the list goes, once the overlay labels them.
  const UNLABELLED_IN_OVERLAY = [
    `Certificate/${NS}/sandbox-injector`,
    `Certificate/${NS}/sandbox-injector-ca`,
    `Issuer/${NS}/sandbox-injector-ca`,
    `Issuer/${NS}/sandbox-injector-selfsigned`,
  ];

  it('object by object with config.create=false (the overlay leaves the ConfigMap out), Helm labels aside', async () => {
    const chart = releaseObjects(
      await helm.template({ certificates: { mode: 'cert-manager' }, config: { create: false } }),
    );
    const overlay = withoutReleaseNamespace(kustomizedCertManager);
    expect([...chart.keys()].sort()).toEqual([...overlay.keys()].sort());
    for (const [key, object] of overlay) {
      if (UNLABELLED_IN_OVERLAY.includes(key)) {
        expect(object.metadata.labels, key).toBeUndefined();
        expect(chart.get(key)?.metadata.labels, key).toEqual(COMMON_LABELS);
        const unlabelled = structuredClone(chart.get(key));
        if (unlabelled !== undefined) delete unlabelled.metadata.labels;
        expect(unlabelled, key).toEqual(object);
      } else {
        expect(chart.get(key), key).toEqual(object);
      }
    }
  });

  it('config.create=true makes the ConfigMap of components/injection-config, in sandbox-system', () => {
    const configMap = `ConfigMap/${CONFIG_NS}/sandbox-injection-config`;
    expect(byKey(kustomized).has(configMap)).toBe(false);
    expect(releaseObjects(render('certManager')).has(configMap)).toBe(false);
    const sample = parseObjects(readFileSync(INJECTION_CONFIG, 'utf8'));
    expect(at(releaseObjects(render('withConfig')).get(configMap), 'data')).toEqual(at(sample[0], 'data'));
  });

  it('signs with an issuer of your own: only the serving Certificate, pointing at it', () => {
    const objects = render('certManagerOwnIssuer');
    expect(objects.filter((o) => o.kind === 'Issuer' || o.kind === 'Certificate').map(objectKey)).toEqual([
      `Certificate/${NS}/sandbox-injector`,
    ]);
    expect(at(find(objects, 'Certificate'), 'spec', 'issuerRef')).toEqual({
      group: 'cert-manager.io',
      kind: 'ClusterIssuer',
      name: 'corp-ca',
    });
  });
});

describe('autoscaling and monitoring on render manifests/ with components/autoscaling and components/monitoring (and the policy)', () => {
  it('object by object, apart from Helm standard labels: the same HPA, PDB, metrics Service, ServiceMonitor and alert rules', () => {
    const chart = releaseObjects(render('components'));
    const kustomize = withoutReleaseNamespace(kustomizedWithComponents);
    expect([...chart.keys()].sort()).toEqual([...kustomize.keys()].sort());
    for (const [key, object] of kustomize) expect(chart.get(key), key).toEqual(object);
  });
});

describe('another release in another namespace: every name and namespace follows the release', () => {
  const { release, namespace, fullname } = OTHER;

  it('puts every namespaced object in the release namespace but the injection ConfigMap and its Role, named from the release', async () => {
    const objects = (
      await helm.template({ monitoring: { enabled: true }, config: { create: true } }, { release, namespace })
    ).filter((o) => !isHook(o));
    const configNamespace = new Set([
      'ConfigMap/sandbox-injection-config',
      `Role/${fullname}`,
      `RoleBinding/${fullname}`,
    ]);
    for (const o of objects) {
      const where = configNamespace.has(`${o.kind}/${o.metadata.name}`)
        ? CONFIG_NS
        : o.kind.startsWith('Cluster') || o.kind.endsWith('WebhookConfiguration') || o.kind.startsWith('Validating')
          ? undefined
          : namespace;
      expect(o.metadata.namespace, objectKey(o)).toBe(where);
      if (o.kind !== 'ConfigMap')
        expect(o.metadata.name, objectKey(o)).toMatch(new RegExp(`^${fullname}(-(certs|tls|metrics|pod-ownership))?$`));
      expect(o.metadata.labels?.['app.kubernetes.io/instance'], objectKey(o)).toBe(release);
    }
    expect(objects.map(objectKey).sort()).toEqual(
      [
        `ClusterRole//${fullname}`,
        `ClusterRole//${fullname}-certs`,
        `ClusterRoleBinding//${fullname}`,
        `ClusterRoleBinding//${fullname}-certs`,
        `ConfigMap/${CONFIG_NS}/sandbox-injection-config`,
        `Deployment/${namespace}/${fullname}`,
        `MutatingWebhookConfiguration//${fullname}`,
        `PodDisruptionBudget/${namespace}/${fullname}`,
        `PrometheusRule/${namespace}/${fullname}`,
        `Role/${CONFIG_NS}/${fullname}`,
        `Role/${namespace}/${fullname}-certs`,
        `RoleBinding/${CONFIG_NS}/${fullname}`,
        `RoleBinding/${namespace}/${fullname}-certs`,
        `Secret/${namespace}/${fullname}-tls`,
        `Service/${namespace}/${fullname}`,
        `Service/${namespace}/${fullname}-metrics`,
        `ServiceAccount/${namespace}/${fullname}`,
        `ServiceMonitor/${namespace}/${fullname}`,
        `ValidatingAdmissionPolicy//${fullname}-pod-ownership`,
        `ValidatingAdmissionPolicyBinding//${fullname}-pod-ownership`,
      ].sort(),
    );
    // Every binding names the release's ServiceAccount, and the caBundle rule names the release's configuration.
    for (const binding of objects.filter((o) => o.kind.endsWith('RoleBinding'))) {
      expect(at(binding, 'subjects'), objectKey(binding)).toEqual([
        { kind: 'ServiceAccount', name: fullname, namespace },
      ]);
    }
    expect(at(find(objects, 'ClusterRole', `${fullname}-certs`), 'rules', 0, 'resourceNames')).toEqual([fullname]);
    expect(at(find(objects, 'Role', `${fullname}-certs`), 'rules', 0, 'resourceNames')).toEqual([`${fullname}-tls`]);
    expect(at(find(objects, 'Deployment', fullname), 'spec', 'template', 'spec', 'serviceAccountName')).toBe(fullname);
    const webhook = at(find(objects, 'MutatingWebhookConfiguration', fullname), 'webhooks', 0);
    expect(at(webhook, 'clientConfig', 'service')).toEqual({ name: fullname, namespace, path: '/mutate', port: 443 });
    expect(at(webhook, 'namespaceSelector')).toEqual({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [namespace, 'kube-system'] }],
    });
    expect(args(objects)).toEqual(
      expect.arrayContaining([
        `--config-namespace=${CONFIG_NS}`,
        '--config-name=sandbox-injection-config',
        '--cert-mode=self-managed',
        `--cert-namespace=${namespace}`,
        `--cert-secret-name=${fullname}-tls`,
        `--service-name=${fullname}`,
        `--webhook-config-name=${fullname}`,
      ]),
    );
    // The alert rules name this namespace and Deployment; the job stays the chart's name (the ServiceMonitor's jobLabel).
    const rules = JSON.stringify(at(find(objects, 'PrometheusRule', fullname), 'spec'));
    expect(rules).toContain(`namespace=\\"${namespace}\\", deployment=\\"${fullname}\\"`);
    expect(rules).toContain(`job=\\"sandbox-injector\\"`);
    expect(rules).not.toContain(NS);
    expect(at(find(objects, 'ServiceMonitor', fullname), 'spec', 'selector', 'matchLabels')).toEqual({
      'app.kubernetes.io/name': 'sandbox-injector',
      'app.kubernetes.io/instance': release,
      'app.kubernetes.io/component': 'metrics',
    });
  });

  it('cert-manager mode: the Certificate is for the Service in the release namespace, and the CA injection points at it', async () => {
    const objects = await helm.template({ certificates: { mode: 'cert-manager' } }, { release, namespace });
    const certificate = find(objects, 'Certificate', fullname);
    expect(certificate.metadata.namespace).toBe(namespace);
    expect(at(certificate, 'spec')).toMatchObject({
      secretName: `${fullname}-tls`,
      commonName: `${fullname}.${namespace}.svc`,
      dnsNames: [
        fullname,
        `${fullname}.${namespace}`,
        `${fullname}.${namespace}.svc`,
        `${fullname}.${namespace}.svc.cluster.local`,
      ],
      issuerRef: { group: 'cert-manager.io', kind: 'Issuer', name: `${fullname}-ca` },
    });
    expect(
      objects
        .filter((o) => o.kind === 'Issuer')
        .map(objectKey)
        .sort(),
    ).toEqual([`Issuer/${namespace}/${fullname}-ca`, `Issuer/${namespace}/${fullname}-selfsigned`]);
    expect(at(find(objects, 'Certificate', `${fullname}-ca`), 'spec', 'issuerRef', 'name')).toBe(
      `${fullname}-selfsigned`,
    );
    expect(find(objects, 'MutatingWebhookConfiguration', fullname).metadata.annotations).toEqual({
      'cert-manager.io/inject-ca-from': `${namespace}/${fullname}`,
    });
    expect(
      at(find(objects, 'Deployment', fullname), 'spec', 'template', 'spec', 'volumes', 0, 'secret', 'secretName'),
    ).toBe(`${fullname}-tls`);
  });

  it('fullnameOverride and nameOverride, cut to 63 characters for the names that carry a suffix', async () => {
    const objects = await helm.template({ fullnameOverride: 'webhook' }, { release, namespace });
    expect(find(objects, 'Service', 'webhook').metadata.namespace).toBe(namespace);
    expect(args(objects)).toEqual(expect.arrayContaining(['--cert-secret-name=webhook-tls', '--service-name=webhook']));
    const renamed = await helm.template({ nameOverride: 'injector' }, { release, namespace });
    expect(find(renamed, 'Deployment', 'agents-injector').metadata.labels?.['app.kubernetes.io/name']).toBe('injector');
    // A 53-character release: <release>-sandbox-injector is cut to 63, and so is fullname before a suffix.
    const long = 'a'.repeat(53);
    const cut = await helm.template({}, { release: long, namespace });
    expect(find(cut, 'Deployment', `${long}-sandbox-i`).metadata.name).toHaveLength(63);
    expect(find(cut, 'Role', `${long}-san-certs`).metadata.name).toHaveLength(63);
    expect(args(cut)).toEqual(expect.arrayContaining([`--cert-secret-name=${long}-sandb-tls`]));
  });
});

describe('helm template with other values', () => {
  it('autoscaling: an autoscaling/v2 HPA on CPU, no replica count in the Deployment, one replica at a time in the PDB', () => {
    const objects = render('scaledAndMonitored');
    expect(at(find(objects, 'HorizontalPodAutoscaler'), 'spec')).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'sandbox-injector' },
      minReplicas: 2,
      maxReplicas: 10,
      metrics: [
        { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } },
      ],
    });
    expect(find(objects, 'HorizontalPodAutoscaler').apiVersion).toBe('autoscaling/v2');
    expect(at(find(objects, 'Deployment'), 'spec', 'replicas')).toBeUndefined();
    const defaults = releaseObjects(render('defaults'));
    const service = find(objects, 'Service');
    expect(withoutHelmLabels(service)).toEqual(defaults.get(objectKey(service)));
    expect(at(service, 'spec', 'ports')).toEqual([
      { name: 'https', port: 443, targetPort: 'webhook', protocol: 'TCP' },
    ]);
    const budget = find(objects, 'PodDisruptionBudget');
    expect(at(budget, 'spec', 'maxUnavailable')).toBe(1);
    expect(at(budget, 'spec', 'minAvailable')).toBeUndefined();
    expect(at(budget, 'spec', 'selector')).toEqual(
      at(find(render('defaults'), 'PodDisruptionBudget'), 'spec', 'selector'),
    );
    expect(at(find(objects, 'Deployment'), 'spec', 'template')).toEqual(
      at(find(render('defaults'), 'Deployment'), 'spec', 'template'),
    );
  });

  it('autoscaling: the API server accepts the HPA with the Deployment and PDB it works with (server dry run)', async () => {
    const ns = 'e2e-helm-dry-run';
    await cluster.ensureNamespace(ns);
    const objects = (await helm.template({ autoscaling: { enabled: true } }, { namespace: ns })).filter((o) =>
      ['HorizontalPodAutoscaler', 'Deployment', 'PodDisruptionBudget'].includes(o.kind),
    );
    expect(objects).toHaveLength(3);
    const result = await cluster.kubectl(
      ['apply', '--server-side', '--dry-run=server', '--validate=strict', '-f', '-'],
      {
        input: objects.map((o) => toYaml(o)).join('---\n'),
      },
    );
    expect(result.stderr).toBe('');
    expect(result.stdout.trim().split('\n').sort()).toEqual([
      'deployment.apps/sandbox-injector serverside-applied (server dry run)',
      'horizontalpodautoscaler.autoscaling/sandbox-injector serverside-applied (server dry run)',
      'poddisruptionbudget.policy/sandbox-injector serverside-applied (server dry run)',
    ]);
    expect(result.code).toBe(0);
  });

  it.each([
    [{ autoscaling: { enabled: true, minReplicas: 1 } }, 'autoscaling.minReplicas must be at least 2'],
    [
      { certificates: { mode: 'vault' } },
      "at '/certificates/mode': value must be one of 'self-managed', 'cert-manager'",
    ],
    [{ webhook: { failurePolicy: 'Sometimes' } }, "at '/webhook/failurePolicy': value must be one of 'Fail', 'Ignore'"],
    [{ webhook: { timeoutSeconds: 31 } }, "at '/webhook/timeoutSeconds': maximum: got 31, want 30"],
    [{ logLevel: 'loud' }, "at '/logLevel': value must be one of"],
    [{ postStartConflict: 'chain' }, "at '/postStartConflict': value must be one of"],
    [{ replica: 3 }, "additional properties 'replica' not allowed"],
    // The release's namespace is Helm's: the value that used to choose another one is gone.
    [{ namespace: { name: 'elsewhere' } }, "additional properties 'namespace' not allowed"],
    [{ fullnameOverride: 'Not_A_Name' }, "at '/fullnameOverride'"],
  ])('refuses %j: %s', async (values, message) => {
    const result = await helm.run([
      'template',
      RELEASE,
      CHART,
      '--kube-version',
      KUBE_VERSION,
      ...helm.valuesArgs(values),
    ]);
    expect(result.stderr).toContain(message);
    expect(result.code).not.toBe(0);
  });

  it('monitoring: a ServiceMonitor on a metrics Service of its own, selected by the given labels', () => {
    const objects = render('scaledAndMonitored');
    const monitor = find(objects, 'ServiceMonitor');
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
    expect(find(objects, 'PrometheusRule').metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
    const metrics = find(objects, 'Service', 'sandbox-injector-metrics');
    const selector = at(monitor, 'spec', 'selector', 'matchLabels') as Record<string, string>;
    // The metrics Service alone: not the webhook's Service, whose one port is 443.
    const selected = objects.filter(
      (o) => o.kind === 'Service' && Object.entries(selector).every(([k, v]) => o.metadata.labels?.[k] === v),
    );
    expect(selected).toEqual([metrics]);
    expect(at(find(objects, 'Service'), 'spec', 'ports')).toEqual([
      { name: 'https', port: 443, targetPort: 'webhook', protocol: 'TCP' },
    ]);
    expect(at(metrics, 'spec', 'ports')).toEqual([
      { name: 'metrics', port: 9090, targetPort: 'metrics', protocol: 'TCP' },
    ]);
    expect(at(metrics, 'spec', 'selector')).toEqual(at(find(objects, 'Service'), 'spec', 'selector'));
    expect(at(monitor, 'spec', 'namespaceSelector')).toBeUndefined();
    expect(at(monitor, 'spec', 'jobLabel')).toBe('app.kubernetes.io/name');
    expect(monitor.metadata.namespace).toBe(metrics.metadata.namespace);
    expect(at(monitor, 'spec', 'endpoints')).toEqual([
      { port: 'metrics', path: '/metrics', scheme: 'http', interval: '30s' },
    ]);
  });

  it('monitoring off: no metrics Service, and the metrics port is on no Service', () => {
    const services = render('defaults').filter((o) => o.kind === 'Service');
    expect(services.map((o) => o.metadata.name)).toEqual(['sandbox-injector']);
    expect(JSON.stringify(at(services[0], 'spec', 'ports'))).not.toContain('9090');
  });

  it('monitoring: a PrometheusRule with the six alerts, which promtool check rules accepts', () => {
    const rule = find(render('scaledAndMonitored'), 'PrometheusRule');
    const groups = at(rule, 'spec', 'groups') as { rules: { alert: string }[] }[];
    expect(groups.flatMap((g) => g.rules.map((r) => r.alert))).toEqual(ALERTS);
    const dir = mkdtempSync(path.join(tmpdir(), 'si-e2e-rules-'));
    try {
      const file = path.join(dir, 'rules.yaml');
      writeFileSync(file, toYaml(at(rule, 'spec')));
      const out = execFileSync(toolPath('promtool', 'promtool'), ['check', 'rules', file], { encoding: 'utf8' });
      expect(out).toContain(`SUCCESS: ${ALERTS.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('monitoring: the slow-admission threshold is the largest bucket within half of webhook.timeoutSeconds', async () => {
    const expr = async (timeoutSeconds: number): Promise<string> => {
      const objects = await helm.template({ monitoring: { enabled: true }, webhook: { timeoutSeconds } });
      const groups = at(find(objects, 'PrometheusRule'), 'spec', 'groups') as {
        rules: { alert: string; expr: string }[];
      }[];
      return groups.flatMap((g) => g.rules).find((r) => r.alert === 'SandboxInjectorSlowAdmissions')?.expr ?? '';
    };
    expect(await expr(5)).toContain('{le="2.5"}');
    expect(await expr(2)).toContain('{le="1"}');
    expect(await expr(1)).toContain('{le="0.5"}');
    expect(await expr(30)).toContain('{le="2.5"}');
  });

  it('config.create=false: no ConfigMap; the Role and the flags name the ConfigMap and namespace given', () => {
    const objects = render('configElsewhere');
    expect(objects.filter((o) => o.kind === 'ConfigMap')).toEqual([]);
    const role = find(objects, 'Role');
    expect(role.metadata.namespace).toBe('platform-config');
    expect(at(role, 'rules')).toEqual([
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['team-runtimes'], verbs: ['get', 'list', 'watch'] },
    ]);
    const binding = find(objects, 'RoleBinding');
    expect(binding.metadata.namespace).toBe('platform-config');
    expect(at(binding, 'subjects')).toEqual([{ kind: 'ServiceAccount', name: 'sandbox-injector', namespace: NS }]);
    expect(args(objects)).toEqual(
      expect.arrayContaining(['--config-namespace=platform-config', '--config-name=team-runtimes']),
    );
  });

  it('every other value reaches the object it is for', () => {
    const objects = render('everythingChanged');
    const ns = NS;
    const deployment = find(objects, 'Deployment');
    expect(at(deployment, 'spec', 'replicas')).toBe(3);
    expect(at(container(objects), 'image')).toBe('registry.example.com/sandbox-injector:1.2.3');
    expect(at(container(objects), 'imagePullPolicy')).toBe('Always');
    expect(at(container(objects), 'env', 0)).toEqual({
      name: 'SANDBOX_INJECTOR_WRAPPER_IMAGE',
      value: 'registry.example.com/wrapper:9',
    });
    // Helm merges a map value with the default: limits.cpu stays unless set to null.
    expect(at(container(objects), 'resources')).toEqual({
      requests: { cpu: '250m', memory: '200Mi' },
      limits: { cpu: '1', memory: '512Mi' },
    });
    const defaultArgs = args(render('defaults')) as string[];
    expect(args(objects)).toEqual([
      ...defaultArgs.map((a) =>
        a.startsWith('--trusted-creators=')
          ? '--trusted-creators=group:system:serviceaccounts:sandbox-system,user:ci'
          : a,
      ),
      '--poststart-conflict=merge',
      '--log-level=debug',
      '--allow-annotation-runtimes',
      '--cert-poll=30s',
    ]);
    const webhook = at(find(objects, 'MutatingWebhookConfiguration'), 'webhooks', 0);
    expect(at(webhook, 'failurePolicy')).toBe('Ignore');
    expect(at(webhook, 'timeoutSeconds')).toBe(10);
    expect(at(webhook, 'objectSelector')).toEqual({
      matchExpressions: [{ key: 'agents.kruise.io/created-by', operator: 'Exists' }],
    });
    expect(at(webhook, 'namespaceSelector')).toEqual({ matchLabels: { 'sandboxes.example.com/enabled': 'true' } });
    expect(at(webhook, 'clientConfig', 'service')).toEqual({
      name: 'sandbox-injector',
      namespace: ns,
      path: '/mutate',
      port: 443,
    });
    // A string is the key's text as it is; a map is written as JSON, which the webhook and the controller read.
    const data = at(find(objects, 'ConfigMap', 'sandbox-injection-config'), 'data') as Record<string, string>;
    expect(Object.keys(data).sort()).toEqual(['agent-runtime', 'gpu']);
    expect(data['agent-runtime']).toBe('{"mainContainer": {"name": ""}}\n');
    expect(JSON.parse(data.gpu ?? '')).toEqual({ mainContainer: { name: '', env: [{ name: 'A', value: 'b' }] } });
    // Without --cert-namespace's default, the webhook must know the chart's namespace and leave it alone.
    expect(
      at(find(render('configElsewhere'), 'MutatingWebhookConfiguration'), 'webhooks', 0, 'namespaceSelector'),
    ).toEqual({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [NS, 'kube-system'] }],
    });
  });

  it('an empty trustedCreators list leaves the flag out (every creator trusted, as the server documents)', async () => {
    const objects = await helm.template({ trustedCreators: [], podOwnershipPolicy: { enabled: false } });
    expect((args(objects) as string[]).filter((a) => a.startsWith('--trusted-creators'))).toEqual([]);
    expect(objects.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))).toEqual([]);
  });

  it('refuses to render the pod ownership policy with an empty trustedCreators list, saying what to do', async () => {
    const result = await helm.run(['template', RELEASE, CHART, '-n', NS, ...helm.valuesArgs({ trustedCreators: [] })]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      'podOwnershipPolicy.enabled needs trustedCreators: with an empty list every creator would be trusted and the policy would deny nothing',
    );
  });

  it("renders the policy's trusted creators from trustedCreators: users (NAME, user:NAME) and groups", () => {
    const policy = find(render('everythingChanged'), 'ValidatingAdmissionPolicy', 'sandbox-injector-pod-ownership');
    expect(at(policy, 'spec', 'matchConditions')).toEqual([
      {
        name: 'not-a-trusted-creator',
        expression:
          '!(request.userInfo.username in ["ci"]) && ' +
          '!request.userInfo.?groups.orValue([]).exists(g, g in ["system:serviceaccounts:sandbox-system"])',
      },
    ]);
    expect(
      find(render('everythingChanged'), 'ValidatingAdmissionPolicyBinding', 'sandbox-injector-pod-ownership').spec,
    ).toEqual({ policyName: 'sandbox-injector-pod-ownership', validationActions: ['Deny'] });
  });

  it('webhook.url points the configuration at a URL, with its CA, and drops the cert-manager annotation', async () => {
    const caBundle = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');
    const objects = await helm.template({
      certificates: { mode: 'cert-manager' },
      webhook: { url: 'https://127.0.0.1:9443/mutate', caBundle },
    });
    const config = find(objects, 'MutatingWebhookConfiguration');
    expect(at(config, 'webhooks', 0, 'clientConfig')).toEqual({ url: 'https://127.0.0.1:9443/mutate', caBundle });
    expect(config.metadata.annotations).toBeUndefined();
  });
});

/** What the API server says about an object: its JSON, or undefined for NotFound. */
async function stored(object: KubeObject): Promise<Record<string, unknown> | undefined> {
  const where = object.metadata.namespace === undefined ? [] : ['-n', object.metadata.namespace];
  // Kind.version.group names the type exactly (Certificate or Role could be another group's too).
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : ['', object.apiVersion];
  const type = group === '' ? object.kind : `${object.kind}.${version ?? ''}.${group ?? ''}`;
  const result = await cluster.kubectl([...where, 'get', type, object.metadata.name, '-o', 'json']);
  if (result.code !== 0) {
    expect(result.stderr, objectKey(object)).toContain('NotFound');
    return undefined;
  }
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

/**
 * Creates a Sandbox whose pod asks for agent-runtime and csi, and returns that pod as the API server admitted it,
 * once a dry run shows the webhook answers (kube-apiserver loads a new webhook configuration, and the webhook's
 * watch the ConfigMap, each in its own time).
 */
async function admittedSandboxPod(name: string): Promise<Record<string, unknown>> {
  const sandbox = JSON.parse(
    await cluster.kubectlOk(['create', '-f', '-', '-o', 'json'], {
      input: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'Sandbox',
        metadata: { name, namespace: PODS_NS },
        spec: {
          runtimes: [{ name: 'agent-runtime' }, { name: 'csi' }],
          template: {
            spec: { automountServiceAccountToken: false, containers: [{ name: 'main', image: 'python:3.12' }] },
          },
        },
      }),
    }),
  ) as SandboxObject;
  // Nothing injected by the controller: whatever the pod gets comes from the webhook.
  const pod = JSON.stringify(podFromSandbox(sandbox));
  const injected = async (): Promise<true | string> => {
    const dry = await cluster.kubectl(['create', '--dry-run=server', '-f', '-', '-o', 'json'], { input: pod });
    if (dry.code !== 0) return dry.stderr.trim();
    return at(JSON.parse(dry.stdout), 'metadata', 'annotations', STATUS) !== undefined || 'no status annotation';
  };
  await waitUntil(injected, {
    what: `the webhook to inject a dry-run pod of ${name}`,
    timeoutMs: 60_000,
    intervalMs: 100,
    until: (answer) => answer === true,
  });
  return JSON.parse(await cluster.kubectlOk(['create', '-f', '-', '-o', 'json'], { input: pod })) as Record<
    string,
    unknown
  >;
}

/** The pod got both runtimes from the chart's ConfigMap, and the webhook logged the admission. */
async function expectInjected(pod: Record<string, unknown>, webhook: WebhookProcess, name: string): Promise<void> {
  expect(JSON.parse(String(at(pod, 'metadata', 'annotations', STATUS)))).toEqual({
    injected: ['agent-runtime', 'csi'],
    present: [],
    skipped: [],
    wrapped: [],
    revision: expect.stringMatching(/^sha256:[0-9a-f]{16}$/) as unknown,
  });
  const initNames = ((at(pod, 'spec', 'initContainers') ?? []) as { name: string }[]).map((c) => c.name);
  expect(initNames).toEqual(['agent-runtime', 'csi-sidecar']);
  const lines = await webhook.logged(
    (l) => l.msg === 'admission' && l.namespace === PODS_NS && l.pod === name,
    `admission of ${name}`,
  );
  expect(lines[0]).toMatchObject({ decision: 'injected' });
}

/** The deletes helm sent since event `from` of the audit log, as `resource/name`, in the order they completed. */
function helmDeletes(from: number): { what: string; code: number | undefined }[] {
  return readAuditEvents(auditLog)
    .slice(from)
    .filter((e) => e.verb === 'delete' && (e.userAgent ?? '').startsWith('Helm/'))
    .map((e) => ({ what: `${e.objectRef?.resource ?? ''}/${e.objectRef?.name ?? ''}`, code: e.responseStatus?.code }));
}

describe('helm install of another release into another namespace, --wait, a Sandbox pod, helm uninstall', () => {
  const { release, namespace, fullname } = OTHER;
  let webhook: WebhookProcess | undefined;
  let port = 0;
  let installed: KubeObject[] = [];
  const auditStart = { events: 0 };

  // No kubelet: the webhook is the test's process, and the Deployment is scaled to 0 (see the file's top). No
  // caBundle: the process fills it in, as a self-managed replica does.
  // The test creates Sandbox pods as the cluster's admin (group system:masters), which the chart's pod ownership
  // policy must trust as it trusts the Sandbox controller.
  const installValues = (): Record<string, unknown> => ({
    replicas: 0,
    config: { create: true },
    webhook: { url: `https://127.0.0.1:${port}/mutate` },
    trustedCreators: [TRUSTED_CONTROLLER, 'group:system:masters'],
  });

  const releaseStatus = async (): Promise<unknown> =>
    at(JSON.parse(await helm.runOk(['status', release, '-n', namespace, '-o', 'json'])), 'info', 'status');

  beforeAll(async () => {
    port = await freePort();
    await cluster.ensureNamespace(namespace);
    auditStart.events = readAuditEvents(auditLog).length;
  });

  afterAll(async () => {
    await webhook?.stop();
  });

  it('install --wait returns once the Deployment is observed and its ReplicaSet exists, not before', async () => {
    const install = helm.start([
      'install',
      release,
      CHART,
      '-n',
      namespace,
      '--wait',
      '--timeout',
      '5m',
      ...helm.valuesArgs(installValues()),
    ]);
    let exited: { stderr: string } | undefined;
    void install.done.then((result) => (exited = result));
    await waitUntil(async () => (await cluster.kubectl(['-n', namespace, 'get', 'deployment', fullname])).code === 0, {
      what: 'helm install to create the Deployment',
      timeoutMs: 120_000,
      intervalMs: 100,
      giveUp: () => (exited === undefined ? undefined : new Error(`helm install exited early: ${exited.stderr}`)),
    });
    // Every object is there, and helm is still waiting: nothing has played the Deployment controller yet.
    expect(await releaseStatus()).toBe('pending-install');
    expect(exited).toBeUndefined();

    await settleScaledToZero(cluster, namespace, fullname);
    const result = await install.done;
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(await releaseStatus()).toBe('deployed');
  });

  it('installs exactly the objects helm template renders for the same release, and stores the uninstall hook', async () => {
    installed = parseObjects(await helm.runOk(['get', 'manifest', release, '-n', namespace]));
    const expected = (await helm.template(installValues(), { release, namespace })).filter((o) => !isHook(o));
    expect(installed.map(objectKey).sort()).toEqual(expected.map(objectKey).sort());
    for (const object of installed) {
      const live = await stored(object);
      expect(live, objectKey(object)).toBeDefined();
      expect(at(live, 'metadata', 'labels'), objectKey(object)).toMatchObject({
        'app.kubernetes.io/managed-by': 'Helm',
        'app.kubernetes.io/instance': release,
      });
    }
    // Installed against the cluster, the render has the hook that helm template leaves out.
    const hooks = parseObjects(await helm.runOk(['get', 'hooks', release, '-n', namespace]));
    expect(hooks.map((h) => [objectKey(h), h.metadata.annotations?.['helm.sh/hook'], h.webhooks])).toEqual([
      [`MutatingWebhookConfiguration//${fullname}`, 'pre-delete', []],
    ]);
  });

  it("the Deployment's self-managed flags, run as the chart's ServiceAccount, keep the release's Secret and caBundle", async () => {
    const deployment = find(installed, 'Deployment', fullname);
    const rendered = at(deployment, 'spec', 'template', 'spec', 'containers', 0, 'args') as string[];
    // The flags that name objects; the process's own certificate directory, ports and log level stay the test's.
    const naming = rendered.filter((a) =>
      /^--(config-namespace|config-name|cert-namespace|cert-secret-name|service-name|webhook-config-name)=/.test(a),
    );
    expect(naming).toHaveLength(6);
    const identity = await serviceAccountIdentity(
      cluster,
      namespace,
      String(at(deployment, 'spec', 'template', 'spec', 'serviceAccountName')),
    );
    webhook = await startWebhookProcess(cluster, {
      selfManaged: true,
      port,
      kubeconfigPath: identity.kubeconfigPath,
      extraArgs: naming,
    });

    const secret = JSON.parse(
      await cluster.kubectlOk(['-n', namespace, 'get', 'secret', `${fullname}-tls`, '-o', 'json']),
    ) as Record<string, unknown>;
    const cert = new X509Certificate(Buffer.from(String(at(secret, 'data', 'tls.crt')), 'base64'));
    for (const name of [
      fullname,
      `${fullname}.${namespace}`,
      `${fullname}.${namespace}.svc`,
      `${fullname}.${namespace}.svc.cluster.local`,
    ]) {
      expect(cert.subjectAltName).toContain(`DNS:${name}`);
    }
    expect(cert.subject).toContain(`CN=${fullname}.${namespace}.svc`);
    // The process wrote the CA into the release's webhook configuration, with the chart's RBAC alone.
    const caBundle = async (): Promise<string> =>
      Buffer.from(
        await cluster.kubectlOk([
          'get',
          'mutatingwebhookconfiguration',
          fullname,
          '-o',
          'jsonpath={.webhooks[0].clientConfig.caBundle}',
        ]),
        'base64',
      ).toString('utf8');
    const secretCa = Buffer.from(String(at(secret, 'data', 'ca.crt')), 'base64').toString('utf8');
    await waitUntil(caBundle, {
      what: "the caBundle to become the Secret's CA",
      timeoutMs: 60_000,
      intervalMs: 100,
      until: (bundle) => bundle === secretCa,
    });
  });

  it("a Sandbox pod created after the install gets its runtimes from the chart's ConfigMap", async () => {
    if (webhook === undefined) throw new Error('no webhook process');
    await expectInjected(await admittedSandboxPod('sbx-helm'), webhook, 'sbx-helm');
  });

  it('helm uninstall leaves nothing of the chart behind', async () => {
    expect(kindsOf(installed)).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'Deployment',
      'MutatingWebhookConfiguration',
      'PodDisruptionBudget',
      'Role',
      'RoleBinding',
      'Secret',
      'Service',
      'ServiceAccount',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    const deploymentUid = at(await stored(find(installed, 'Deployment', fullname)), 'metadata', 'uid');
    const before = readAuditEvents(auditLog).length;
    const result = await helm.run(['uninstall', release, '-n', namespace]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(helmDeletes(before).filter((d) => d.code !== 200 && d.code !== 404)).toEqual([]);

    for (const object of installed) expect(await stored(object), objectKey(object)).toBeUndefined();
    // The hook is gone too, and so is the release record; the namespace was not the chart's.
    expect((await cluster.kubectl(['get', 'mutatingwebhookconfiguration', fullname])).stderr).toContain('NotFound');
    expect((await helm.runOk(['list', '-n', namespace, '--all', '-q'])).trim()).toBe('');
    expect(
      (await cluster.kubectlOk(['-n', namespace, 'get', 'secrets', '-l', 'owner=helm', '-o', 'name'])).trim(),
    ).toBe('');
    expect(
      at(
        JSON.parse(await cluster.kubectlOk(['get', 'namespace', namespace, '-o', 'json'])),
        'metadata',
        'deletionTimestamp',
      ),
    ).toBeUndefined();
    // The ReplicaSet the test made for the Deployment belongs to the garbage collector (not run here): it is
    // owned by the Deployment that is now gone.
    const replicaSets = JSON.parse(await cluster.kubectlOk(['-n', namespace, 'get', 'replicasets', '-o', 'json'])) as {
      items: unknown[];
    };
    for (const rs of replicaSets.items) expect(at(rs, 'metadata', 'ownerReferences', 0, 'uid')).toBe(deploymentUid);
  });

  it('deleted the webhook configuration before the Service it calls (the pre-delete hook), per the audit log', () => {
    const deletes = helmDeletes(auditStart.events).map((d) => `${d.what} ${String(d.code)}`);
    const service = deletes.indexOf(`services/${fullname} 200`);
    const deployment = deletes.indexOf(`deployments/${fullname} 200`);
    const configs = deletes.flatMap((d, i) =>
      d.startsWith(`mutatingwebhookconfigurations/${fullname} 200`) ? [i] : [],
    );
    expect(service).toBeGreaterThanOrEqual(0);
    expect(deployment).toBeGreaterThanOrEqual(0);
    // The release's configuration (before-hook-creation), then the hook's own empty one (hook-succeeded).
    expect(configs).toHaveLength(2);
    for (const i of configs) expect(i).toBeLessThan(Math.min(service, deployment));
    // The configuration the hook created in between had no webhooks: nothing was called through it.
    const created = readAuditEvents(auditLog)
      .slice(auditStart.events)
      .filter(
        (e) =>
          e.verb === 'create' &&
          e.objectRef?.resource === 'mutatingwebhookconfigurations' &&
          (e.userAgent ?? '').startsWith('Helm/'),
      );
    expect(created.map((e) => (at(e.requestObject, 'webhooks') as unknown[] | undefined)?.length ?? 0)).toEqual([1, 0]);
  });
});

describe('helm template | kubectl apply -f -', () => {
  const release = 'applied';
  const namespace = 'e2e-applied';
  const fullname = 'applied-sandbox-injector';
  let webhook: WebhookProcess;

  beforeAll(async () => {
    webhook = await startWebhookProcess(cluster);
    await cluster.ensureNamespace(namespace);
  });

  afterAll(async () => {
    await webhook?.stop();
  });

  it('applies one webhook configuration, the working one, and a Sandbox pod gets its runtimes through it', async () => {
    const values = {
      replicas: 0,
      config: { create: true },
      webhook: { url: webhook.url, caBundle: Buffer.from(webhook.ca.certPem).toString('base64') },
      trustedCreators: [TRUSTED_CONTROLLER, 'group:system:masters'],
    };
    // The plain render, hooks and all, as a GitOps tool would take it.
    const text = await helm.templateText(values, { release, namespace });
    const result = await cluster.kubectl(['apply', '-f', '-'], { input: text });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const objects = parseObjects(text);
    expect(result.stdout.trim().split('\n')).toHaveLength(objects.length);
    const config = JSON.parse(
      await cluster.kubectlOk(['get', 'mutatingwebhookconfiguration', fullname, '-o', 'json']),
    ) as unknown;
    expect(at(config, 'webhooks', 0, 'clientConfig', 'url')).toBe(webhook.url);
    expect((at(config, 'webhooks') as unknown[]).length).toBe(1);
    const all = JSON.parse(await cluster.kubectlOk(['get', 'mutatingwebhookconfigurations', '-o', 'json'])) as {
      items: unknown[];
    };
    expect(all.items.map((c) => at(c, 'metadata', 'name'))).toEqual([fullname]);
    await expectInjected(await admittedSandboxPod('sbx-applied'), webhook, 'sbx-applied');
  });

  it('kubectl delete of the same render, webhook configuration first, removes it all again', async () => {
    const text = await helm.templateText({ replicas: 0 }, { release, namespace });
    const objects = parseObjects(text);
    const first = objects.filter((o) => o.kind === 'MutatingWebhookConfiguration');
    await cluster.kubectlOk(['delete', '-f', '-'], { input: first.map((o) => toYaml(o)).join('---\n') });
    await cluster.kubectlOk(['delete', '-f', '-', '--ignore-not-found'], { input: text });
    for (const object of objects) expect(await stored(object), objectKey(object)).toBeUndefined();
  });
});

// A second release under the chart's default name, in a namespace of its own; its webhook configuration calls
// the Service, as in a real install (nothing calls it here).
describe('helm upgrade and helm uninstall --no-hooks', () => {
  const SECOND_NS = 'sandbox-system-second';
  const storedConfig = async (): Promise<unknown> =>
    JSON.parse(await cluster.kubectlOk(['get', 'mutatingwebhookconfiguration', RELEASE, '-o', 'json']));

  it('helm upgrade keeps the caBundle the webhook wrote, and turning the autoscaler on keeps the replica count', async () => {
    await cluster.ensureNamespace(SECOND_NS);
    await helm.runOk(['install', RELEASE, CHART, '-n', SECOND_NS]);
    // What a self-managed replica (or cert-manager's CA injector) does once it has a CA.
    const caBundle = Buffer.from(cluster.caPem).toString('base64');
    await cluster.kubectlOk([
      'patch',
      'mutatingwebhookconfiguration',
      RELEASE,
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: caBundle }]),
    ]);

    await helm.runOk([
      'upgrade',
      RELEASE,
      CHART,
      '-n',
      SECOND_NS,
      ...helm.valuesArgs({ webhook: { timeoutSeconds: 7 }, autoscaling: { enabled: true } }),
    ]);
    const config = await storedConfig();
    expect(at(config, 'webhooks', 0, 'timeoutSeconds')).toBe(7);
    expect(at(config, 'webhooks', 0, 'clientConfig', 'caBundle')).toBe(caBundle);
    expect(at(config, 'webhooks', 0, 'clientConfig', 'service')).toEqual({
      name: RELEASE,
      namespace: SECOND_NS,
      path: '/mutate',
      port: 443,
    });
    // Without the chart's lookup of the live count, Helm would delete spec.replicas and the API server would
    // default it to 1.
    const deployment = JSON.parse(
      await cluster.kubectlOk(['-n', SECOND_NS, 'get', 'deployment', RELEASE, '-o', 'json']),
    ) as unknown;
    expect(at(deployment, 'spec', 'replicas')).toBe(2);
    expect((await cluster.kubectl(['-n', SECOND_NS, 'get', 'horizontalpodautoscaler', RELEASE])).code).toBe(0);
  });

  it('without the hook (helm uninstall --no-hooks) Helm deletes the Service first: the hook is what orders it', async () => {
    const before = readAuditEvents(auditLog).length;
    await helm.runOk(['uninstall', RELEASE, '-n', SECOND_NS, '--no-hooks']);
    // Helm's own release record (a Secret sh.helm.release.v1.*) goes after the chart's objects, and so do the
    // pod ownership policy and its binding, kinds Helm 3's uninstall order does not list.
    const deletes = helmDeletes(before)
      .filter((d) => !d.what.startsWith('secrets/sh.helm.release.v1.'))
      .filter((d) => !d.what.startsWith('validatingadmissionpolic'))
      .map((d) => `${d.what} ${String(d.code)}`);
    expect(deletes.indexOf(`services/${RELEASE} 200`)).toBeGreaterThanOrEqual(0);
    expect(deletes.indexOf(`mutatingwebhookconfigurations/${RELEASE} 200`)).toBe(deletes.length - 1);
  });
});
