// deliver-env as a release ships it: `helm template` with deliverEnv.enabled, monitoring.enabled and
// networkPolicy.enabled names every object after the release, scrapes deliver-env with a ServiceMonitor of its
// own and alerts with rules the real promtool accepts and tests (test/alerts/deliver-env/); the kustomize
// components render the same objects; and two releases install side by side on the real kube-apiserver. The
// NetworkPolicies reach the API server only at the addresses given, and neither the chart nor the component
// renders without them.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseDocument, stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byKey, isHook, objectKey, releaseObjects } from './support/chart-objects.js';
import { repoRoot, resolveToolDir } from './support/binaries.js';
import { startCluster, type TestCluster } from './support/cluster.js';
import { asYaml, findObject, kustomize, MANIFESTS, objectId, renderWithComponents } from './support/components.js';
import { CHART, makeHelm, parseObjects, type Helm, type KubeObject } from './support/helm.js';
import { at } from './support/json.js';
import { runPromtool } from './support/promtool.js';

const CRDS = path.join(repoRoot, 'test', 'fixtures', 'e2e', 'prometheus-operator-crds.yaml');
const TESTS_DIR = path.join(repoRoot, 'test', 'alerts', 'deliver-env');
const RULES_FILE = 'deliver-env.rules.yaml';
const ALERTS = [
  'SandboxInjectorEnvDeliveryFailing',
  'SandboxInjectorEnvdUnauthorized',
  'SandboxInjectorDeliverNoLeader',
  'SandboxInjectorDeliverQueueStalled',
  'SandboxInjectorPoolPodsMissingRuntimes',
  'SandboxInjectorStalePoolPodsNotDecreasing',
  'SandboxInjectorClaimToEnvSlow',
];
const API_SERVER_CIDRS = ['10.0.0.10/32', '10.96.0.1/32'];
const API_SERVER_PEERS = API_SERVER_CIDRS.map((cidr) => ({ ipBlock: { cidr } }));
const API_SERVER_PORTS = [
  { port: 443, protocol: 'TCP' },
  { port: 6443, protocol: 'TCP' },
];
const ALL_ON = {
  deliverEnv: { enabled: true },
  monitoring: { enabled: true },
  networkPolicy: { enabled: true, apiServerCidrs: API_SERVER_CIDRS },
};
const NETWORK_POLICIES = path.join(repoRoot, 'manifests', 'components', 'network-policies');
const ADDRESSES_EXAMPLE = path.join(NETWORK_POLICIES, 'api-server-addresses.example.yaml');

/** The component's example ApiServerAddresses as a user fills it in: the shipped file with these `peers`. */
function addressesFile(peers: readonly unknown[]): Record<string, string> {
  const doc = parseDocument(readFileSync(ADDRESSES_EXAMPLE, 'utf8'));
  doc.set('peers', peers);
  return { 'api-server-addresses.yaml': doc.toString() };
}

interface Rule {
  alert: string;
  expr: string;
}
interface RulesSpec {
  groups: { name: string; rules: Rule[] }[];
}

let cluster: TestCluster;
let helm: Helm;
let root: string;
let runs = 0;

beforeAll(async () => {
  resolveToolDir('promtool');
  cluster = await startCluster();
  helm = makeHelm(cluster.kubeconfigPath);
  root = mkdtempSync(path.join(tmpdir(), 'si-e2e-deliver-release-'));
});

afterAll(async () => {
  helm?.dispose();
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
  await cluster?.stop();
});

const testFiles = (): string[] => readdirSync(TESTS_DIR).filter((name) => name.endsWith('.yaml'));

/** `spec` as the rules file beside copies of the unit tests, their namespace changed to `namespace`. */
function folderWith(spec: unknown, namespace = 'sandbox-injector-system'): { dir: string; files: string[] } {
  const dir = path.join(root, `run-${++runs}`);
  mkdirSync(dir);
  writeFileSync(path.join(dir, RULES_FILE), toYaml(spec));
  const files = testFiles();
  for (const name of files) {
    const text = readFileSync(path.join(TESTS_DIR, name), 'utf8')
      .replaceAll('namespace="sandbox-injector-system"', `namespace="${namespace}"`)
      .replaceAll('namespace: sandbox-injector-system', `namespace: ${namespace}`)
      .replaceAll(' in sandbox-injector-system ', ` in ${namespace} `);
    writeFileSync(path.join(dir, name), text);
  }
  return { dir, files };
}

async function promtoolTests(spec: unknown, namespace?: string): Promise<{ code: number; output: string }> {
  const { dir, files } = folderWith(spec, namespace);
  const result = await runPromtool(['test', 'rules', ...files], dir);
  return { code: result.code, output: result.stdout + result.stderr };
}

const labelsMatch = (selector: unknown, labels: unknown): boolean =>
  Object.entries((selector ?? {}) as Record<string, string>).every(
    ([key, value]) => (labels as Record<string, string> | undefined)?.[key] === value,
  );

describe('helm template foo -n agents with deliverEnv, monitoring and networkPolicy enabled', () => {
  const release = 'foo';
  const namespace = 'agents';
  const fullname = 'foo-sandbox-injector';
  let objects: KubeObject[] = [];

  beforeAll(async () => {
    objects = (await helm.template(ALL_ON, { release, namespace })).filter((o) => !isHook(o));
  });

  it("names every object after the release's fullname, in the release's namespace, deliver-env's too", () => {
    const deliverEnv = objects.filter((o) => o.metadata.name.includes('deliver-env')).map(objectKey);
    expect(deliverEnv.sort()).toEqual(
      [
        `ClusterRole//${fullname}-deliver-env`,
        `ClusterRoleBinding//${fullname}-deliver-env`,
        `Deployment/${namespace}/${fullname}-deliver-env`,
        `NetworkPolicy/${namespace}/${fullname}-deliver-env`,
        `PodDisruptionBudget/${namespace}/${fullname}-deliver-env`,
        `PrometheusRule/${namespace}/${fullname}-deliver-env`,
        `Role/${namespace}/${fullname}-deliver-env`,
        `RoleBinding/${namespace}/${fullname}-deliver-env`,
        `Role/sandbox-system/${fullname}-deliver-env`,
        `RoleBinding/sandbox-system/${fullname}-deliver-env`,
        `Service/${namespace}/${fullname}-deliver-env-metrics`,
        `ServiceAccount/${namespace}/${fullname}-deliver-env`,
        `ServiceMonitor/${namespace}/${fullname}-deliver-env`,
      ].sort(),
    );
    for (const o of objects) {
      if (o.kind === 'ConfigMap') continue;
      expect(o.metadata.name, objectKey(o)).toMatch(new RegExp(`^${fullname}(-[a-z-]+)?$`));
      expect(o.metadata.labels?.['app.kubernetes.io/instance'], objectKey(o)).toBe(release);
    }
    const deployment = findObject(objects, 'Deployment', `${fullname}-deliver-env`);
    const args = at(deployment, 'spec', 'template', 'spec', 'containers', 0, 'args') as string[];
    expect(args).toContain(`--lease-name=${fullname}-deliver-env`);
    expect(args).toContain(`--lease-namespace=${namespace}`);
    expect(at(findObject(objects, 'Role', `${fullname}-deliver-env`), 'rules', 0, 'resourceNames')).toEqual([
      `${fullname}-deliver-env`,
    ]);
  });

  it("has a ServiceMonitor that selects a Service of deliver-env's pods on their metrics port, and only it", () => {
    const pods = at(findObject(objects, 'Deployment', `${fullname}-deliver-env`), 'spec', 'template');
    const podLabels = at(pods, 'metadata', 'labels');
    const podPorts = at(pods, 'spec', 'containers', 0, 'ports') as { name: string }[];
    const monitors = objects.filter((o) => o.kind === 'ServiceMonitor');
    const services = objects.filter((o) => o.kind === 'Service');
    const scraped = (monitor: KubeObject): KubeObject[] =>
      services.filter((s) => labelsMatch(at(monitor, 'spec', 'selector', 'matchLabels'), s.metadata.labels));
    const ofDeliverEnv = monitors.filter((m) =>
      scraped(m).some((s) => labelsMatch(at(s, 'spec', 'selector'), podLabels)),
    );
    expect(ofDeliverEnv.map((m) => m.metadata.name)).toEqual([`${fullname}-deliver-env`]);
    const [monitor] = ofDeliverEnv;
    expect(scraped(monitor as KubeObject).map((s) => s.metadata.name)).toEqual([`${fullname}-deliver-env-metrics`]);
    const endpoint = at(monitor, 'spec', 'endpoints', 0) as { port: string };
    const service = findObject(objects, 'Service', `${fullname}-deliver-env-metrics`);
    const servicePort = (at(service, 'spec', 'ports') as { name: string; targetPort: string }[]).find(
      (p) => p.name === endpoint.port,
    );
    expect(podPorts.map((p) => p.name)).toContain(servicePort?.targetPort);
    // The webhook's ServiceMonitor does not scrape deliver-env: its job label stays the webhook's alone.
    const webhookMonitor = findObject(objects, 'ServiceMonitor', fullname);
    expect(scraped(webhookMonitor).some((s) => labelsMatch(at(s, 'spec', 'selector'), podLabels))).toBe(false);
  });

  it('has NetworkPolicies on the webhook and deliver-env pods: webhook port and API server at its addresses, metrics to the scraper, envd out', () => {
    const webhookPods = at(findObject(objects, 'Deployment', fullname), 'spec', 'template', 'metadata', 'labels');
    const deliverPods = at(
      findObject(objects, 'Deployment', `${fullname}-deliver-env`),
      'spec',
      'template',
      'metadata',
      'labels',
    );
    const webhookPolicy = findObject(objects, 'NetworkPolicy', fullname);
    const deliverPolicy = findObject(objects, 'NetworkPolicy', `${fullname}-deliver-env`);
    expect(labelsMatch(at(webhookPolicy, 'spec', 'podSelector', 'matchLabels'), webhookPods)).toBe(true);
    expect(labelsMatch(at(deliverPolicy, 'spec', 'podSelector', 'matchLabels'), deliverPods)).toBe(true);
    expect(at(webhookPolicy, 'spec', 'ingress', 0)).toEqual({
      from: API_SERVER_PEERS,
      ports: [{ port: 'webhook', protocol: 'TCP' }],
    });
    expect(at(webhookPolicy, 'spec', 'ingress', 1, 'from', 0, 'podSelector', 'matchLabels')).toEqual({
      'app.kubernetes.io/name': 'prometheus',
    });
    expect(at(webhookPolicy, 'spec', 'egress')).toEqual([{ to: API_SERVER_PEERS, ports: API_SERVER_PORTS }]);
    expect(at(deliverPolicy, 'spec', 'egress')).toEqual([
      {
        to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'agents.kruise.io/created-by': 'sandbox' } } }],
        ports: [{ port: 49983, protocol: 'TCP' }],
      },
      { to: API_SERVER_PEERS, ports: API_SERVER_PORTS },
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
    ]);
  });

  it('refuses to render the NetworkPolicies without apiServerCidrs, saying how to find the addresses', async () => {
    for (const deliverEnv of [false, true]) {
      const values = { deliverEnv: { enabled: deliverEnv }, networkPolicy: { enabled: true } };
      const result = await helm.templateRun(values, { release, namespace });
      expect(result.code, `deliverEnv ${deliverEnv}`).not.toBe(0);
      expect(result.stderr).toContain('networkPolicy.apiServerCidrs is empty');
      expect(result.stderr).toContain(
        "kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes -o jsonpath='{.items[*].endpoints[*].addresses[*]}'",
      );
      expect(result.stderr).toContain("kubectl get svc kubernetes -n default -o jsonpath='{.spec.clusterIP}'");
      expect(result.stderr).toContain('docs/install.md, "NetworkPolicies"');
    }
    // An address that is not a CIDR is refused by the schema; without the policies, none is needed.
    const bare = { networkPolicy: { enabled: true, apiServerCidrs: ['10.0.0.10'] } };
    const refused = await helm.templateRun(bare, { release, namespace });
    expect(refused.stderr).toContain("at '/networkPolicy/apiServerCidrs/0'");
    expect(refused.code).not.toBe(0);
    const off = await helm.template({ deliverEnv: { enabled: true } }, { release, namespace });
    expect(off.filter((o) => o.kind === 'NetworkPolicy')).toEqual([]);
  });

  it('opens the webhook port to networkPolicy.webhookFrom instead, where it is set, and changes nothing else', async () => {
    const webhookFrom = [{ ipBlock: { cidr: '172.16.0.0/16' } }];
    const values = { ...ALL_ON, networkPolicy: { ...ALL_ON.networkPolicy, webhookFrom } };
    const changed = (await helm.template(values, { release, namespace })).filter((o) => o.kind === 'NetworkPolicy');
    const before = objects.filter((o) => o.kind === 'NetworkPolicy');
    const webhookPolicy = findObject(changed, 'NetworkPolicy', fullname);
    expect(at(webhookPolicy, 'spec', 'ingress', 0, 'from')).toEqual(webhookFrom);
    (at(webhookPolicy, 'spec', 'ingress', 0) as Record<string, unknown>).from = API_SERVER_PEERS;
    expect(changed).toEqual(before);
  });

  it("has deliver-env's seven alerts, which promtool checks and whose tests pass in the release's namespace", async () => {
    const spec = at(findObject(objects, 'PrometheusRule', `${fullname}-deliver-env`), 'spec') as RulesSpec;
    expect(spec.groups.flatMap((g) => g.rules.map((r) => r.alert))).toEqual(ALERTS);
    const { dir } = folderWith(spec, namespace);
    const check = await runPromtool(['check', 'rules', '--lint=all', '--lint-fatal', RULES_FILE], dir);
    expect(check.stderr).toBe('');
    expect(check.stdout).toContain(`SUCCESS: ${ALERTS.length} rules found`);
    const tests = await promtoolTests(spec, namespace);
    expect(tests.output).not.toContain('FAILED');
    expect(tests.code).toBe(0);
  });
});

describe('manifests/components/deliver-env, deliver-env-monitoring and network-policies', () => {
  let spec: RulesSpec;
  let rendered: KubeObject[] = [];

  beforeAll(async () => {
    rendered = await renderWithComponents(
      cluster.binDir,
      ['deliver-env', 'deliver-env-monitoring', 'network-policies'],
      MANIFESTS,
      addressesFile(API_SERVER_PEERS),
    );
    spec = at(findObject(rendered, 'PrometheusRule', 'sandbox-injector-deliver-env'), 'spec') as RulesSpec;
  });

  it('render what the chart renders for the release sandbox-injector, apart from Helm standard labels', async () => {
    const base = new Set((await kustomize(cluster.binDir, MANIFESTS)).map(objectId));
    const added = byKey(rendered.filter((o) => !base.has(objectId(o)) && o.kind !== 'Namespace'));
    const chart = releaseObjects(await helm.template(ALL_ON));
    for (const [key, object] of added) expect(chart.get(key), key).toEqual(object);
    expect([...added.keys()].filter((key) => key.includes('deliver-env')).length).toBeGreaterThanOrEqual(9);
  });

  it("narrow the API server's rules to the ApiServerAddresses given, which is not rendered, and the API server takes them", async () => {
    const policies = rendered.filter((o) => o.kind === 'NetworkPolicy');
    expect(policies.map((o) => o.metadata.name).sort()).toEqual(['sandbox-injector', 'sandbox-injector-deliver-env']);
    const webhookPolicy = findObject(policies, 'NetworkPolicy', 'sandbox-injector');
    expect(at(webhookPolicy, 'spec', 'ingress', 0, 'from')).toEqual(API_SERVER_PEERS);
    expect(at(webhookPolicy, 'spec', 'egress')).toEqual([{ to: API_SERVER_PEERS, ports: API_SERVER_PORTS }]);
    const deliverPolicy = findObject(policies, 'NetworkPolicy', 'sandbox-injector-deliver-env');
    expect(at(deliverPolicy, 'spec', 'egress', 1)).toEqual({ to: API_SERVER_PEERS, ports: API_SERVER_PORTS });
    expect(rendered.filter((o) => o.kind === 'ApiServerAddresses')).toEqual([]);
    expect(JSON.stringify(rendered)).not.toContain('API_SERVER_ADDRESSES');
    await cluster.ensureNamespace('sandbox-injector-system');
    const accepted = await cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], {
      input: asYaml(policies),
    });
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stdout).toContain('networkpolicy.networking.k8s.io/sandbox-injector created (server dry run)');
  });

  it('refuse to build without ApiServerAddresses, or with its example as shipped (no peers)', async () => {
    const components = ['deliver-env', 'network-policies'] as const;
    await expect(renderWithComponents(cluster.binDir, components)).rejects.toThrow(
      /nothing selected by ApiServerAddresses\.\[noVer\]\.\[noGrp\]\/sandbox-injector/,
    );
    const shipped = { 'api-server-addresses.yaml': readFileSync(ADDRESSES_EXAMPLE, 'utf8') };
    await expect(renderWithComponents(cluster.binDir, components, MANIFESTS, shipped)).rejects.toThrow(
      /fieldPath `peers\.0\.ipBlock\.cidr` is missing for replacement source ApiServerAddresses/,
    );
    await expect(renderWithComponents(cluster.binDir, components, MANIFESTS, addressesFile([]))).rejects.toThrow(
      /fieldPath `peers\.0\.ipBlock\.cidr` is missing/,
    );
  });

  it('ship a placeholder that the API server refuses when networkpolicy.yaml is applied without kustomize', async () => {
    await cluster.ensureNamespace('sandbox-injector-system');
    const result = await cluster.kubectl([
      'apply',
      '--dry-run=server',
      '-f',
      path.join(NETWORK_POLICIES, 'networkpolicy.yaml'),
    ]);
    expect(result.stderr).toMatch(/ipBlock\.cidr: Invalid value: "API_SERVER_ADDRESSES"/);
    expect(result.code).not.toBe(0);
  });

  it('pass every unit test of test/alerts/deliver-env/', async () => {
    const { code, output } = await promtoolTests(spec);
    expect(output).not.toContain('FAILED');
    expect(output.match(/^ {2}SUCCESS$/gm)).toHaveLength(testFiles().length);
    expect(code).toBe(0);
  });

  for (const alert of ALERTS) {
    it(`fail the unit tests when ${alert} never fires or always fires (the tests can fail)`, async () => {
      for (const expr of ['vector(1) < 0', 'vector(1)']) {
        const broken = structuredClone(spec);
        const rule = broken.groups.flatMap((g) => g.rules).find((r) => r.alert === alert);
        if (rule === undefined) throw new Error(`no rule ${alert}`);
        rule.expr = expr;
        const { code, output } = await promtoolTests(broken);
        expect(code, `${alert}: ${expr}`).not.toBe(0);
        expect(output).toContain('FAILED');
      }
    });
  }
});

describe('two releases side by side on the real kube-apiserver', () => {
  // No kubelet here: the webhooks answer nothing, so they ignore failures rather than refuse pods.
  const values = (extra: Record<string, unknown>): Record<string, unknown> => ({
    ...ALL_ON,
    replicas: 0,
    webhook: { failurePolicy: 'Ignore', url: 'https://127.0.0.1:1/mutate' },
    ...extra,
  });
  const releases = [
    // The injection ConfigMap lives where the Sandbox controller reads it, one for the cluster: at most one release
    // creates it (config.create is off by default), and both read it.
    { release: 'alpha', namespace: 'e2e-rel-a', values: values({ config: { create: true } }) },
    { release: 'beta', namespace: 'e2e-rel-b', values: values({}) },
  ];
  const manifests = new Map<string, KubeObject[]>();

  beforeAll(async () => {
    await cluster.kubectlOk(['apply', '--server-side', '-f', CRDS]);
    await cluster.kubectlOk(['wait', '--for=condition=Established', 'crd', '--all', '--timeout=60s']);
    // A stand-in of upstream's namespace: each release's Role that reads the injection ConfigMap goes there.
    await cluster.ensureNamespace('sandbox-system');
    for (const { namespace } of releases) await cluster.ensureNamespace(namespace);
  });

  it('both install, each with its own objects, cluster-wide ones included', async () => {
    for (const { release, namespace, values: v } of releases) {
      const result = await helm.run(['install', release, CHART, '-n', namespace, ...helm.valuesArgs(v)]);
      expect(result.stderr, release).toBe('');
      expect(result.code, release).toBe(0);
      manifests.set(release, parseObjects(await helm.runOk(['get', 'manifest', release, '-n', namespace])));
    }
    const [alpha = [], beta = []] = releases.map(({ release }) => manifests.get(release) ?? []);
    const alphaKeys = new Set(alpha.map(objectKey));
    expect(beta.map(objectKey).filter((key) => alphaKeys.has(key))).toEqual([]);
    for (const [release, objects] of manifests) {
      const clusterWide = objects.filter((o) => o.kind.startsWith('Cluster')).map((o) => o.metadata.name);
      expect(clusterWide, release).toContain(`${release}-sandbox-injector-deliver-env`);
      for (const o of objects) {
        const live = await cluster.kubectl([
          'get',
          o.kind,
          o.metadata.name,
          ...(o.metadata.namespace ? ['-n', o.metadata.namespace] : []),
          '-o',
          'json',
        ]);
        expect(live.code, objectKey(o)).toBe(0);
        expect(at(JSON.parse(live.stdout), 'metadata', 'labels', 'app.kubernetes.io/instance'), objectKey(o)).toBe(
          release,
        );
      }
    }
  });

  it('uninstalling one leaves the other whole', async () => {
    const result = await helm.run(['uninstall', 'alpha', '-n', 'e2e-rel-a']);
    expect(result.code, result.stderr).toBe(0);
    for (const o of manifests.get('beta') ?? []) {
      const ns = o.metadata.namespace === undefined ? [] : ['-n', o.metadata.namespace];
      expect((await cluster.kubectl(['get', o.kind, o.metadata.name, ...ns])).code, objectKey(o)).toBe(0);
    }
    const clusterRole = await cluster.kubectl(['get', 'clusterrole', 'alpha-sandbox-injector-deliver-env']);
    expect(clusterRole.code).not.toBe(0);
  });
});
