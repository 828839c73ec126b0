// manifests/components/ (autoscaling, monitoring) enabled as docs/install.md says, rendered by the real
// kubectl's kustomize and applied to a real kube-apiserver: they change only what they say they change, the
// API server accepts the HorizontalPodAutoscaler, the PodDisruptionBudget and the Deployment (server-side
// apply, strict field validation, Pod Security "restricted"), and, through stand-in CRDs, stores the
// PrometheusRule and the ServiceMonitor. No controller runs here, so nothing scales: what is checked is what
// the API server accepts and stores, and what the documented handover of `replicas` does to the field.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import {
  MANIFESTS,
  asYaml,
  findObject,
  kustomize,
  objectId,
  renderWithComponents,
  type KubeObject,
} from './support/components.js';
import { makeHelm } from './support/helm.js';
import { at } from './support/json.js';

const CRDS = path.join(repoRoot, 'test', 'fixtures', 'e2e', 'prometheus-operator-crds.yaml');
const NS = 'sandbox-injector-system';
const NAME = 'sandbox-injector';

let current: TestCluster | undefined;
let base: KubeObject[] = [];
let both: KubeObject[] = [];

function cluster(): TestCluster {
  if (current === undefined) throw new Error('cluster not started');
  return current;
}

const deploymentOf = (objects: KubeObject[]): KubeObject => findObject(objects, 'Deployment', NAME);
const containerOf = (objects: KubeObject[]): unknown =>
  at(deploymentOf(objects), 'spec', 'template', 'spec', 'containers', 0);

beforeAll(async () => {
  current = await startCluster();
  const c = cluster();
  await c.kubectlOk(['apply', '-f', CRDS]);
  for (const crd of ['prometheusrules.monitoring.coreos.com', 'servicemonitors.monitoring.coreos.com']) {
    await c.kubectlOk(['wait', '--for=condition=Established', `crd/${crd}`, '--timeout=60s']);
  }
  base = await kustomize(c.binDir, MANIFESTS);
  both = await renderWithComponents(c.binDir, ['autoscaling', 'monitoring']);
});

afterAll(async () => {
  await current?.stop();
});

describe('kubectl kustomize with manifests/components/', () => {
  it('leaves kubectl kustomize manifests/ as it was: two replicas, minAvailable 1, no autoscaler, no monitoring', () => {
    // The base's CPU request is the one the autoscaler's target is a share of (docs/install.md, "Scaling with load").
    expect(base.map((o) => o.kind)).not.toEqual(expect.arrayContaining(['HorizontalPodAutoscaler']));
    expect(base.filter((o) => o.apiVersion.startsWith('monitoring.coreos.com/'))).toEqual([]);
    expect(at(deploymentOf(base), 'spec', 'replicas')).toBe(2);
    expect(at(containerOf(base), 'resources', 'requests', 'cpu')).toBe('150m');
    expect(at(findObject(base, 'PodDisruptionBudget', NAME), 'spec', 'minAvailable')).toBe(1);
  });

  it('adds the autoscaler, the metrics Service, the ServiceMonitor and the PrometheusRule, and changes only the Deployment and the PDB', () => {
    const before = new Map(base.map((o) => [objectId(o), o]));
    const added = both
      .filter((o) => !before.has(objectId(o)))
      .map(objectId)
      .sort();
    expect(added).toEqual([
      `HorizontalPodAutoscaler/${NS}/${NAME}`,
      `PrometheusRule/${NS}/${NAME}`,
      `Service/${NS}/${NAME}-metrics`,
      `ServiceMonitor/${NS}/${NAME}`,
    ]);
    const changed = both.filter(
      (o) => before.has(objectId(o)) && JSON.stringify(o) !== JSON.stringify(before.get(objectId(o))),
    );
    expect(changed.map(objectId).sort()).toEqual([`Deployment/${NS}/${NAME}`, `PodDisruptionBudget/${NS}/${NAME}`]);
    expect(both).toHaveLength(base.length + 4);
    // Labelled like the rest of the install.
    for (const o of both.filter((o) => !before.has(objectId(o)))) {
      expect(o.metadata.labels, objectId(o)).toMatchObject({
        'app.kubernetes.io/name': NAME,
        'app.kubernetes.io/part-of': 'openkruise-agents',
      });
    }
  });

  it('autoscaling: the HPA scales the Deployment on CPU from two replicas, which no longer sets its own count', () => {
    const hpa = findObject(both, 'HorizontalPodAutoscaler', NAME);
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(at(hpa, 'spec', 'scaleTargetRef')).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: NAME });
    expect(at(hpa, 'spec', 'minReplicas')).toBeGreaterThanOrEqual(2);
    expect(Number(at(hpa, 'spec', 'maxReplicas'))).toBeGreaterThan(Number(at(hpa, 'spec', 'minReplicas')));
    expect(at(hpa, 'spec', 'metrics')).toEqual([
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } },
    ]);
    const deployment = deploymentOf(both);
    expect(at(deployment, 'spec')).not.toHaveProperty('replicas');
    // Utilisation is a share of the request: without one the HPA cannot compute it.
    expect(at(containerOf(both), 'resources', 'requests', 'cpu')).toBe('150m');
    // Everything else of the Deployment is the base's.
    const rest = (o: KubeObject): unknown => {
      const copy = structuredClone(o);
      delete (at(copy, 'spec') as Record<string, unknown>).replicas;
      return copy;
    };
    expect(rest(deployment)).toEqual(rest(deploymentOf(base)));
  });

  it("autoscaling: the PDB lets one replica go at a time, for the Deployment's pods, at any count", () => {
    const pdb = findObject(both, 'PodDisruptionBudget', NAME);
    expect(at(pdb, 'spec')).toEqual({
      maxUnavailable: 1,
      selector: at(deploymentOf(both), 'spec', 'selector'),
    });
    // At the autoscaler's minimum a drain can still take one replica and leaves one serving.
    const minReplicas = Number(at(findObject(both, 'HorizontalPodAutoscaler', NAME), 'spec', 'minReplicas'));
    expect(minReplicas - 1).toBeGreaterThanOrEqual(1);
    // The spread constraints are the base's, and count the same pods the PDB and the HPA's Deployment do.
    const spread = at(deploymentOf(both), 'spec', 'template', 'spec', 'topologySpreadConstraints') as unknown[];
    expect(spread.map((c) => at(c, 'labelSelector'))).toEqual(
      spread.map(() => at(deploymentOf(both), 'spec', 'selector')),
    );
  });

  it('autoscaling: the request and the target are those docs/install.md works out', () => {
    const doc = readFileSync(path.join(repoRoot, 'docs', 'install.md'), 'utf8');
    const request = String(at(containerOf(both), 'resources', 'requests', 'cpu'));
    const target = Number(
      at(
        findObject(both, 'HorizontalPodAutoscaler', NAME),
        'spec',
        'metrics',
        0,
        'resource',
        'target',
        'averageUtilization',
      ),
    );
    expect(doc).toContain(`rounded up to **${request}**`);
    expect(doc).toContain(`÷ ${(target / 100).toFixed(2)} = `);
    expect(doc).toContain(`target ${target}% of the CPU request`);
  });

  it('monitoring: the ServiceMonitor scrapes a Service of its own that reaches the container port metrics (9090)', () => {
    const monitor = findObject(both, 'ServiceMonitor', NAME);
    const service = findObject(both, 'Service', `${NAME}-metrics`);
    const selector = at(monitor, 'spec', 'selector', 'matchLabels') as Record<string, string>;
    expect(Object.keys(selector).length).toBeGreaterThan(0);
    expect(service.metadata.labels).toMatchObject(selector);
    // Only the metrics Service in the namespace carries those labels: not the webhook's Service.
    const selected = both.filter((o) => o.kind === 'Service' && o.metadata.namespace === monitor.metadata.namespace);
    expect(selected.map((o) => o.metadata.name).sort()).toEqual([NAME, `${NAME}-metrics`]);
    expect(selected.filter((o) => Object.entries(selector).every(([k, v]) => o.metadata.labels?.[k] === v))).toEqual([
      service,
    ]);
    // The job label is the Service's app.kubernetes.io/name, which the alert rules select on (job="sandbox-injector").
    expect(at(monitor, 'spec', 'jobLabel')).toBe('app.kubernetes.io/name');
    expect(service.metadata.labels?.['app.kubernetes.io/name']).toBe(NAME);
    // The metrics Service selects the webhook's pods, as the webhook's Service does.
    expect(at(service, 'spec', 'selector')).toEqual(at(findObject(both, 'Service', NAME), 'spec', 'selector'));
    const endpoints = at(monitor, 'spec', 'endpoints') as unknown[];
    expect(endpoints).toHaveLength(1);
    const portName = at(endpoints[0], 'port');
    const servicePort = (at(service, 'spec', 'ports') as unknown[]).find((p) => at(p, 'name') === portName);
    expect(servicePort).toBeDefined();
    const containerPort = (at(containerOf(both), 'ports') as unknown[]).find(
      (p) => at(p, 'name') === at(servicePort, 'targetPort'),
    );
    expect(containerPort).toEqual({ name: 'metrics', containerPort: 9090, protocol: 'TCP' });
    expect(at(endpoints[0], 'path')).toBe('/metrics');
    expect(at(endpoints[0], 'scheme')).toBe('http');
  });

  it("monitoring: the webhook's Service, which kube-apiserver calls, offers the webhook port alone", () => {
    expect(at(findObject(both, 'Service', NAME), 'spec', 'ports')).toEqual([
      { name: 'https', port: 443, targetPort: 'webhook', protocol: 'TCP' },
    ]);
  });

  it('works on the cert-manager overlay too', async () => {
    const overlay = await kustomize(cluster().binDir, path.join(MANIFESTS, 'overlays', 'cert-manager'));
    const withComponents = await renderWithComponents(
      cluster().binDir,
      ['autoscaling', 'monitoring'],
      path.join(MANIFESTS, 'overlays', 'cert-manager'),
    );
    expect(withComponents.map(objectId).sort()).toEqual(
      [
        ...overlay.map(objectId),
        `HorizontalPodAutoscaler/${NS}/${NAME}`,
        `PrometheusRule/${NS}/${NAME}`,
        `Service/${NS}/${NAME}-metrics`,
        `ServiceMonitor/${NS}/${NAME}`,
      ].sort(),
    );
    expect(at(deploymentOf(withComponents), 'spec')).not.toHaveProperty('replicas');
    // The overlay's own change to the Deployment stays.
    expect(at(containerOf(withComponents), 'args')).toContain('--cert-mode=files');
  });
});

describe('on the API server', () => {
  beforeAll(async () => {
    await cluster().kubectlOk(['apply', '--server-side', '-f', '-'], {
      input: asYaml([findObject(both, 'Namespace', NS)]),
    });
    // A stand-in of upstream's namespace: the Role that reads the injection ConfigMap goes there.
    await cluster().ensureNamespace('sandbox-system');
  });

  it('accepts everything with both components: server-side apply, strict validation, Pod Security restricted', async () => {
    const result = await cluster().kubectl(['apply', '--server-side', '--field-manager=e2e-components', '-f', '-'], {
      input: asYaml(both),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(both.length);
    for (const line of lines) expect(line).toMatch(/ serverside-applied$/);
  });

  it('stores the HPA, the PDB and the Deployment as rendered', async () => {
    const stored = async (kind: string): Promise<unknown> =>
      JSON.parse(await cluster().kubectlOk(['get', kind, NAME, '-n', NS, '-o', 'json'])) as unknown;
    const hpa = await stored('horizontalpodautoscalers.v2.autoscaling');
    expect(at(hpa, 'spec')).toEqual(at(findObject(both, 'HorizontalPodAutoscaler', NAME), 'spec'));
    const pdb = await stored('poddisruptionbudgets.policy');
    expect(at(pdb, 'spec')).toEqual(at(findObject(both, 'PodDisruptionBudget', NAME), 'spec'));
    const deployment = await stored('deployments.apps');
    expect(at(deployment, 'spec', 'template', 'spec', 'containers', 0, 'resources')).toEqual(
      at(containerOf(both), 'resources'),
    );
    // Without a replicas field the API server defaults it to 1 (the autoscaler raises it, when one runs):
    // the dip docs/install.md describes for a fresh install.
    expect(at(deployment, 'spec', 'replicas')).toBe(1);
  });

  it('stores the PrometheusRule and the ServiceMonitor through the stand-in CRDs, unchanged', async () => {
    for (const [kind, resource] of [
      ['PrometheusRule', 'prometheusrules.monitoring.coreos.com'],
      ['ServiceMonitor', 'servicemonitors.monitoring.coreos.com'],
    ] as const) {
      const stored: unknown = JSON.parse(await cluster().kubectlOk(['get', resource, NAME, '-n', NS, '-o', 'json']));
      expect(at(stored, 'spec'), kind).toEqual(at(findObject(both, kind, NAME), 'spec'));
    }
  });

  it('refuses a PDB with both minAvailable and maxUnavailable (why the component removes minAvailable)', async () => {
    const pdb = structuredClone(findObject(both, 'PodDisruptionBudget', NAME));
    (pdb.spec as Record<string, unknown>).minAvailable = 1;
    const result = await cluster().kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], {
      input: asYaml([pdb]),
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/minAvailable and maxUnavailable cannot be both set/);
  });

  it('refuses an HPA whose maximum is under its minimum (control: the HPA is validated, not just stored)', async () => {
    const hpa = structuredClone(findObject(both, 'HorizontalPodAutoscaler', NAME));
    (hpa.spec as Record<string, unknown>).maxReplicas = 1;
    const result = await cluster().kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], {
      input: asYaml([hpa]),
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/maxReplicas/);
  });
});

describe('enabling autoscaling on a running install (docs/install.md)', () => {
  const name = 'handover';
  const APPLY = ['apply', '--server-side', '--field-manager=platform-team', '-f', '-'];
  // The Deployment of each rendering, under another name so that the objects above are left alone.
  const renamed = (objects: KubeObject[]): KubeObject => {
    const deployment = structuredClone(deploymentOf(objects));
    deployment.metadata.name = name;
    return deployment;
  };
  const replicas = async (): Promise<unknown> =>
    JSON.parse(
      await cluster().kubectlOk(['get', 'deployments.apps', name, '-n', NS, '-o', 'jsonpath={.spec.replicas}']),
    );

  it('drops to one replica when the manifest simply loses replicas', async () => {
    await cluster().kubectlOk(APPLY, { input: asYaml([renamed(base)]) });
    expect(await replicas()).toBe(2);
    await cluster().kubectlOk(APPLY, { input: asYaml([renamed(both)]) });
    expect(await replicas()).toBe(1);
  });

  it('keeps the count when another field manager takes replicas over first', async () => {
    await cluster().kubectlOk(APPLY, { input: asYaml([renamed(base)]) });
    expect(await replicas()).toBe(2);
    const replicasOnly: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: NS },
      spec: { replicas: 2 },
    };
    await cluster().kubectlOk(
      ['apply', '--server-side', '--field-manager=handover-to-hpa', '--validate=false', '-f', '-'],
      {
        input: asYaml([replicasOnly]),
      },
    );
    await cluster().kubectlOk(APPLY, { input: asYaml([renamed(both)]) });
    expect(await replicas()).toBe(2);
    const managers = JSON.parse(
      await cluster().kubectlOk(['get', 'deployments.apps', name, '-n', NS, '-o', 'json', '--show-managed-fields']),
    ) as unknown;
    const owners = ((at(managers, 'metadata', 'managedFields') ?? []) as unknown[])
      .filter((entry) => JSON.stringify(at(entry, 'fieldsV1')).includes('"f:replicas"'))
      .map((entry) => at(entry, 'manager'));
    expect(owners).toEqual(['handover-to-hpa']);
  });
});

describe('the release label patch of docs/install.md', () => {
  it('labels both monitoring objects and nothing else', async () => {
    const doc = readFileSync(path.join(repoRoot, 'docs', 'install.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### Alerts'));
    const fenced = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(fenced).toBeDefined();
    const patches = at(parseYaml(fenced ?? ''), 'patches');
    expect(Array.isArray(patches)).toBe(true);
    const dir = mkdtempSync(path.join(tmpdir(), 'si-e2e-release-label-'));
    try {
      const kustomization = {
        resources: [path.relative(dir, MANIFESTS)],
        components: [path.relative(dir, path.join(MANIFESTS, 'components', 'monitoring'))],
        patches,
      };
      writeFileSync(path.join(dir, 'kustomization.yaml'), JSON.stringify(kustomization));
      const labelled = (await kustomize(cluster().binDir, dir)).filter((o) => o.metadata.labels?.release !== undefined);
      expect(labelled.map(objectId).sort()).toEqual([`PrometheusRule/${NS}/${NAME}`, `ServiceMonitor/${NS}/${NAME}`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('components/pod-ownership-policy', () => {
  const POLICY = 'sandbox-injector-pod-ownership';

  it('adds the ValidatingAdmissionPolicy and its binding, labelled like the install, and changes nothing else', async () => {
    for (const resource of [MANIFESTS, path.join(MANIFESTS, 'overlays', 'cert-manager')]) {
      const without = await kustomize(cluster().binDir, resource);
      const withPolicy = await renderWithComponents(cluster().binDir, ['pod-ownership-policy'], resource);
      const before = new Map(without.map((o) => [objectId(o), JSON.stringify(o)]));
      const added = withPolicy.filter((o) => !before.has(objectId(o)));
      expect(added.map(objectId).sort(), resource).toEqual([
        `ValidatingAdmissionPolicy/${POLICY}`,
        `ValidatingAdmissionPolicyBinding/${POLICY}`,
      ]);
      expect(
        withPolicy.filter((o) => before.has(objectId(o)) && before.get(objectId(o)) !== JSON.stringify(o)),
      ).toEqual([]);
      for (const o of added) {
        expect(o.apiVersion).toBe('admissionregistration.k8s.io/v1');
        expect(o.metadata.labels, objectId(o)).toEqual({
          'app.kubernetes.io/name': NAME,
          'app.kubernetes.io/part-of': 'openkruise-agents',
        });
      }
    }
  });

  it('denies, fails closed, matches pod CREATE and UPDATE, and is bound with Deny', async () => {
    const objects = await renderWithComponents(cluster().binDir, ['pod-ownership-policy']);
    const policy = findObject(objects, 'ValidatingAdmissionPolicy', POLICY);
    expect(at(policy, 'spec', 'failurePolicy')).toBe('Fail');
    expect(at(policy, 'spec', 'matchConstraints')).toEqual({
      resourceRules: [
        { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods', 'pods/status'] },
      ],
    });
    expect((at(policy, 'spec', 'validations') as unknown[]).map((v) => at(v, 'reason'))).toEqual([
      'Forbidden',
      'Forbidden',
      'Forbidden',
    ]);
    expect(at(findObject(objects, 'ValidatingAdmissionPolicyBinding', POLICY), 'spec')).toEqual({
      policyName: POLICY,
      validationActions: ['Deny'],
    });
  });

  it("trusts exactly the base Deployment's --trusted-creators (the literal list must follow the flag)", async () => {
    const objects = await renderWithComponents(cluster().binDir, ['pod-ownership-policy']);
    const args = at(containerOf(objects), 'args') as string[];
    const flag = args.find((a) => a.startsWith('--trusted-creators='))?.slice('--trusted-creators='.length);
    expect(flag).toBeDefined();
    const entries = (flag ?? '').split(',').map((e) => e.trim());
    const groups = entries.filter((e) => e.startsWith('group:')).map((e) => e.slice('group:'.length));
    const users = entries.filter((e) => !e.startsWith('group:')).map((e) => e.replace(/^user:/, ''));
    const policy = findObject(objects, 'ValidatingAdmissionPolicy', POLICY);
    expect(at(policy, 'spec', 'matchConditions')).toEqual([
      {
        name: 'not-a-trusted-creator',
        expression:
          `!(request.userInfo.username in ${JSON.stringify(users)}) && ` +
          `!request.userInfo.?groups.orValue([]).exists(g, g in ${JSON.stringify(groups)})`,
      },
    ]);
  });

  it('is accepted by the API server as it is rendered (server-side dry run, strict field validation)', async () => {
    const objects = await renderWithComponents(cluster().binDir, ['pod-ownership-policy']);
    const added = objects.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'));
    const result = await cluster().kubectl(
      ['apply', '--server-side', '--dry-run=server', '--validate=strict', '-f', '-'],
      { input: asYaml(added) },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('components/grafana-dashboard and the chart grafanaDashboard.enabled', () => {
  const JSON_FILE = path.join(repoRoot, 'charts', 'sandbox-injector', 'files', 'grafana-dashboard.json');
  const CONFIGMAP = 'sandbox-injector-grafana-dashboard';

  it("adds only the ConfigMap, for Grafana's sidecar, holding the dashboard as the chart does", async () => {
    const withDashboard = await renderWithComponents(cluster().binDir, ['grafana-dashboard']);
    const before = new Set(base.map(objectId));
    const added = withDashboard.filter((o) => !before.has(objectId(o)));
    expect(added.map(objectId)).toEqual([`ConfigMap/${NS}/${CONFIGMAP}`]);
    const [configMap] = added;
    expect(configMap?.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    const dashboard = readFileSync(JSON_FILE, 'utf8');
    expect(at(configMap, 'data', 'sandbox-injector.json')).toBe(dashboard);

    const helm = makeHelm(cluster().kubeconfigPath);
    try {
      expect((await helm.template({})).filter((o) => o.kind === 'ConfigMap' && o.metadata.name === CONFIGMAP)).toEqual(
        [],
      );
      const rendered = (
        await helm.template({ grafanaDashboard: { enabled: true, annotations: { folder: 'x' } } })
      ).find((o) => o.kind === 'ConfigMap' && o.metadata.name === CONFIGMAP);
      expect(rendered?.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
      expect(rendered?.metadata.annotations).toEqual({ folder: 'x' });
      expect(rendered?.metadata.namespace).toBe(NS);
      // The chart's block scalar drops the file's last newline; the dashboard is the same JSON.
      expect(JSON.parse(String(at(rendered, 'data', 'sandbox-injector.json')))).toEqual(JSON.parse(dashboard));
    } finally {
      helm.dispose();
    }

    await cluster().ensureNamespace(NS);
    const result = await cluster().kubectl(
      ['apply', '--server-side', '--dry-run=server', '--validate=strict', '-f', '-'],
      { input: asYaml(added) },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});
