// What `kubectl apply -k manifests/` installs, checked against a real kube-apiserver: the base renders with
// the real kubectl, the API server accepts every object (server-side apply, dry run, strict field
// validation, Pod Security "restricted"), the cert-manager overlay is well formed, and the RBAC grants the
// service account exactly what the webhook uses (kubectl auth can-i, and real requests as that account).
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { at } from './support/json.js';

const BASE = path.join(repoRoot, 'manifests');
const CERT_MANAGER = path.join(repoRoot, 'manifests', 'overlays', 'cert-manager');
// Ours, and upstream's (OpenKruise Agents'), where only the Role that reads the injection ConfigMap goes.
const NS = 'sandbox-injector-system';
const UPSTREAM_NS = 'sandbox-system';
const SA = `system:serviceaccount:${NS}:sandbox-injector`;

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  [field: string]: unknown;
}

let current: TestCluster | undefined;
let base: KubeObject[] = [];
let overlay: KubeObject[] = [];

function cluster(): TestCluster {
  if (current === undefined) throw new Error('cluster not started');
  return current;
}

function parseObjects(yamlText: string): KubeObject[] {
  return parseAllDocuments(yamlText).map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`document ${i}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (typeof at(value, 'kind') !== 'string' || typeof at(value, 'metadata', 'name') !== 'string') {
      throw new Error(`document ${i} is not a Kubernetes object: ${JSON.stringify(value).slice(0, 200)}`);
    }
    return value as KubeObject;
  });
}

function find(objects: KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`${kind}/${name} not rendered`);
  return found;
}

const ids = (objects: KubeObject[]): string[] =>
  objects
    .map((o) => `${o.kind}/${o.metadata.namespace === undefined ? '' : `${o.metadata.namespace}/`}${o.metadata.name}`)
    .sort();

const asYaml = (objects: KubeObject[]): string => objects.map((o) => toYaml(o)).join('---\n');

beforeAll(async () => {
  current = await startCluster();
  const c = cluster();
  await c.installSandboxCrd();
  base = parseObjects(await c.kubectlOk(['kustomize', BASE]));
  overlay = parseObjects(await c.kubectlOk(['kustomize', CERT_MANAGER]));
});

afterAll(async () => {
  await current?.stop();
});

describe('kubectl kustomize manifests/', () => {
  it('renders the webhook and its RBAC in sandbox-injector-system, the ConfigMap reader in sandbox-system', () => {
    expect(ids(base)).toEqual(
      [
        'ClusterRole/sandbox-injector',
        'ClusterRole/sandbox-injector-certs',
        'ClusterRoleBinding/sandbox-injector',
        'ClusterRoleBinding/sandbox-injector-certs',
        `Deployment/${NS}/sandbox-injector`,
        'MutatingWebhookConfiguration/sandbox-injector',
        `Namespace/${NS}`,
        `PodDisruptionBudget/${NS}/sandbox-injector`,
        `Role/${UPSTREAM_NS}/sandbox-injector`,
        `Role/${NS}/sandbox-injector-certs`,
        `RoleBinding/${UPSTREAM_NS}/sandbox-injector`,
        `RoleBinding/${NS}/sandbox-injector-certs`,
        // Made empty for self-managed certificates, which fill it: the webhook may not create Secrets.
        `Secret/${NS}/sandbox-injector-tls`,
        `Service/${NS}/sandbox-injector`,
        `ServiceAccount/${NS}/sandbox-injector`,
      ].sort(),
    );
  });

  it('configures the webhook: pods CREATE, Sandbox pods only, never its own namespace, fail closed', () => {
    const mwc = find(base, 'MutatingWebhookConfiguration', 'sandbox-injector');
    const webhooks = at(mwc, 'webhooks');
    expect(Array.isArray(webhooks) ? webhooks.length : 0).toBe(1);
    const webhook = at(mwc, 'webhooks', 0);
    expect(at(webhook, 'rules')).toEqual([
      { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' },
    ]);
    // The label the OpenKruise Agents Sandbox controller puts on every pod it creates.
    expect(at(webhook, 'objectSelector')).toEqual({ matchLabels: { 'agents.kruise.io/created-by': 'sandbox' } });
    expect(at(webhook, 'namespaceSelector')).toEqual({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [NS, 'kube-system'] }],
    });
    expect(at(webhook, 'clientConfig')).toEqual({
      service: { name: 'sandbox-injector', namespace: NS, path: '/mutate', port: 443 },
    });
    expect({
      sideEffects: at(webhook, 'sideEffects'),
      admissionReviewVersions: at(webhook, 'admissionReviewVersions'),
      reinvocationPolicy: at(webhook, 'reinvocationPolicy'),
      timeoutSeconds: at(webhook, 'timeoutSeconds'),
      failurePolicy: at(webhook, 'failurePolicy'),
      matchPolicy: at(webhook, 'matchPolicy'),
    }).toEqual({
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
      reinvocationPolicy: 'IfNeeded',
      timeoutSeconds: 5,
      failurePolicy: 'Fail',
      matchPolicy: 'Equivalent',
    });
  });

  it('runs two hardened replicas with self-managed certificates, probed over HTTPS', () => {
    const deployment = find(base, 'Deployment', 'sandbox-injector');
    const pod = at(deployment, 'spec', 'template', 'spec');
    const container = at(pod, 'containers', 0);
    expect(at(deployment, 'spec', 'replicas')).toBe(2);
    expect(at(pod, 'serviceAccountName')).toBe('sandbox-injector');
    expect(at(container, 'image')).toBe('ghcr.io/example/sandbox-injector:0.1.0');
    // The wrapper init container for policy Auto runs the injector's own image.
    expect(at(container, 'env')).toEqual(
      expect.arrayContaining([
        { name: 'SANDBOX_INJECTOR_WRAPPER_IMAGE', value: 'ghcr.io/example/sandbox-injector:0.1.0' },
      ]),
    );
    expect(at(container, 'args')).toEqual(
      expect.arrayContaining([
        'serve',
        '--config-namespace=sandbox-system',
        '--config-name=sandbox-injection-config',
        '--cert-mode=self-managed',
        '--cert-namespace=sandbox-injector-system',
        '--cert-secret-name=sandbox-injector-tls',
        '--service-name=sandbox-injector',
        '--webhook-config-name=sandbox-injector',
        '--cert-dir=/var/run/sandbox-injector/certs',
      ]),
    );
    for (const [probe, path] of [
      ['livenessProbe', '/healthz'],
      ['readinessProbe', '/readyz'],
    ] as const) {
      expect(at(container, probe, 'httpGet')).toEqual({ path, port: 'webhook', scheme: 'HTTPS' });
    }
    expect(at(container, 'ports')).toEqual([
      { name: 'webhook', containerPort: 8443, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
    ]);
    const sized = [
      ['requests', 'cpu'],
      ['requests', 'memory'],
      ['limits', 'cpu'],
      ['limits', 'memory'],
    ] as const;
    for (const [kind, resource] of sized) {
      expect(typeof at(container, 'resources', kind, resource), `${kind} ${resource}`).toBe('string');
    }
    expect(at(pod, 'securityContext', 'runAsNonRoot')).toBe(true);
    expect(at(pod, 'securityContext', 'runAsUser')).toEqual(expect.any(Number));
    expect(at(pod, 'securityContext', 'seccompProfile')).toEqual({ type: 'RuntimeDefault' });
    expect(at(container, 'securityContext')).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(at(container, 'volumeMounts')).toEqual([{ name: 'certs', mountPath: '/var/run/sandbox-injector/certs' }]);
    expect(at(pod, 'volumes', 0, 'emptyDir')).toBeDefined();
    expect(at(pod, 'topologySpreadConstraints', 0, 'topologyKey')).toBe('kubernetes.io/hostname');

    const selector = at(deployment, 'spec', 'selector', 'matchLabels');
    expect(at(find(base, 'PodDisruptionBudget', 'sandbox-injector'), 'spec')).toEqual({
      minAvailable: 1,
      selector: { matchLabels: selector },
    });
    const service = find(base, 'Service', 'sandbox-injector');
    expect(at(service, 'spec', 'selector')).toEqual(selector);
    // Only the webhook: the metrics port's Service comes with components/monitoring.
    expect(at(service, 'spec', 'ports')).toEqual([
      { name: 'https', port: 443, targetPort: 'webhook', protocol: 'TCP' },
    ]);
  });

  it('is accepted by the API server: server-side apply, dry run, strict validation, Pod Security restricted', async () => {
    const c = cluster();
    // A dry run creates nothing, so objects in a namespace that does not exist yet would be refused for that
    // reason alone: the Namespace is created for real first, and upstream's (which the install never creates).
    await c.kubectlOk(['apply', '--server-side', '-f', '-'], { input: asYaml([find(base, 'Namespace', NS)]) });
    await c.ensureNamespace(UPSTREAM_NS);
    const result = await c.kubectl(['apply', '--server-side', '--dry-run=server', '--field-manager=e2e', '-f', '-'], {
      input: asYaml(base),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(base.length);
    for (const line of lines) expect(line).toMatch(/ serverside-applied \(server dry run\)$/);
    // Nothing but the namespace was stored.
    const stored = await c.kubectl(['get', 'mutatingwebhookconfiguration', 'sandbox-injector']);
    expect(stored.code).not.toBe(0);
  });

  it("runs at priority system-cluster-critical: the Deployment's pods are admitted in sandbox-injector-system with it", async () => {
    const c = cluster();
    // The pod's namespace and its service account, for real (the RBAC tests below apply the same objects).
    await c.kubectlOk(['apply', '--server-side', '-f', '-'], {
      input: asYaml([find(base, 'Namespace', NS), find(base, 'ServiceAccount', 'sandbox-injector')]),
    });
    const template = at(find(base, 'Deployment', 'sandbox-injector'), 'spec', 'template');
    const pod = (priorityClassName: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'sandbox-injector-priority', namespace: NS },
      spec: { ...(at(template, 'spec') as Record<string, unknown>), priorityClassName },
    });
    expect(at(template, 'spec', 'priorityClassName')).toBe('system-cluster-critical');
    // The Priority admission plugin resolves the class to its value; a dry run stores nothing.
    const admitted = await c.kubectl(['create', '--dry-run=server', '-o', 'json', '-f', '-'], {
      input: asYaml([pod('system-cluster-critical')]),
    });
    expect(admitted.stderr).toBe('');
    expect(admitted.code).toBe(0);
    expect(at(JSON.parse(admitted.stdout), 'spec', 'priority')).toBe(2000000000);
    // Control: the plugin is on, and refuses a class that does not exist.
    const refused = await c.kubectl(['create', '--dry-run=server', '-f', '-'], {
      input: asYaml([pod('no-such-class')]),
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('no PriorityClass with name no-such-class was found');
  });

  it('would be warned about by Pod Security if the container were less locked down (control for the check above)', async () => {
    const deployment = structuredClone(find(base, 'Deployment', 'sandbox-injector'));
    const securityContext = at(deployment, 'spec', 'template', 'spec', 'containers', 0, 'securityContext');
    if (securityContext === null || typeof securityContext !== 'object')
      throw new Error('no container securityContext');
    delete (securityContext as Record<string, unknown>).allowPrivilegeEscalation;
    const result = await cluster().kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], {
      input: asYaml([deployment]),
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);
  });
});

describe('one retag through kustomize images: changes the container image and the wrapper image', () => {
  const IMAGE = 'ghcr.io/example/sandbox-injector';
  let tree: string;

  beforeAll(() => {
    // A copy of manifests/, edited the way a user would edit theirs.
    tree = mkdtempSync(path.join(tmpdir(), 'si-e2e-kustomize-'));
    cpSync(BASE, path.join(tree, 'manifests'), { recursive: true });
  });

  afterAll(() => {
    rmSync(tree, { recursive: true, force: true });
  });

  const imagesEntry = (entry: Record<string, string>): string => `images:\n${toYaml([{ name: IMAGE, ...entry }])}`;
  const appendTo = (file: string, text: string): void =>
    writeFileSync(file, `${readFileSync(file, 'utf8').trimEnd()}\n${text}`);

  async function imagesOf(dir: string): Promise<{ image: unknown; wrapper: unknown }> {
    const deployment = find(
      parseObjects(await cluster().kubectlOk(['kustomize', dir])),
      'Deployment',
      'sandbox-injector',
    );
    const container = at(deployment, 'spec', 'template', 'spec', 'containers', 0);
    const env = (at(container, 'env') ?? []) as { name: string; value?: string }[];
    return {
      image: at(container, 'image'),
      wrapper: env.find((e) => e.name === 'SANDBOX_INJECTOR_WRAPPER_IMAGE')?.value,
    };
  }

  it('in manifests/kustomization.yaml', async () => {
    const dir = path.join(tree, 'top');
    cpSync(BASE, dir, { recursive: true });
    appendTo(
      path.join(dir, 'kustomization.yaml'),
      imagesEntry({ newName: 'registry.example.com/team/sandbox-injector', newTag: '1.2.3' }),
    );
    const image = 'registry.example.com/team/sandbox-injector:1.2.3';
    expect(await imagesOf(dir)).toEqual({ image, wrapper: image });
  });

  it('in an overlay of your own on top of manifests/ (by digest)', async () => {
    const dir = path.join(tree, 'overlay');
    mkdirSync(dir);
    const digest = `sha256:${'0123456789abcdef'.repeat(4)}`;
    writeFileSync(
      path.join(dir, 'kustomization.yaml'),
      `resources:\n  - ../manifests\n${imagesEntry({ newName: 'registry.example.com/ov/sandbox-injector', digest })}`,
    );
    const image = `registry.example.com/ov/sandbox-injector@${digest}`;
    expect(await imagesOf(dir)).toEqual({ image, wrapper: image });
  });

  it('in overlays/cert-manager', async () => {
    const dir = path.join(tree, 'cm');
    cpSync(BASE, dir, { recursive: true });
    appendTo(path.join(dir, 'overlays', 'cert-manager', 'kustomization.yaml'), imagesEntry({ newTag: '9.9.9' }));
    const image = `${IMAGE}:9.9.9`;
    expect(await imagesOf(path.join(dir, 'overlays', 'cert-manager'))).toEqual({ image, wrapper: image });
  });

  it('would leave the wrapper image behind without base/kustomizeconfig/images.yaml (control for the checks above)', async () => {
    const dir = path.join(tree, 'no-config');
    cpSync(BASE, dir, { recursive: true });
    const base = path.join(dir, 'base', 'kustomization.yaml');
    const text = readFileSync(base, 'utf8');
    expect(text).toContain('  - kustomizeconfig/images.yaml\n');
    writeFileSync(base, text.replace(/^configurations:\n {2}- kustomizeconfig\/images\.yaml\n/m, ''));
    appendTo(path.join(dir, 'kustomization.yaml'), imagesEntry({ newTag: '2.0.0' }));
    expect(await imagesOf(dir)).toEqual({ image: `${IMAGE}:2.0.0`, wrapper: `${IMAGE}:0.1.0` });
  });
});

describe('kubectl kustomize manifests/overlays/cert-manager', () => {
  it('adds the issuers and the Certificate, and drops the rights and the Secret only self-managed certificates need', () => {
    const expected = ids(base)
      .filter(
        (id) => !id.endsWith('sandbox-injector-certs') && !id.startsWith('ConfigMap/') && !id.startsWith('Secret/'),
      )
      .concat([
        `Certificate/${NS}/sandbox-injector`,
        `Certificate/${NS}/sandbox-injector-ca`,
        `Issuer/${NS}/sandbox-injector-ca`,
        `Issuer/${NS}/sandbox-injector-selfsigned`,
      ])
      .sort();
    expect(ids(overlay)).toEqual(expected);
    for (const o of overlay.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')) {
      expect(JSON.stringify(at(o, 'rules'))).not.toMatch(/secrets|mutatingwebhookconfigurations/);
    }
  });

  it('issues the serving certificate for the Service names into sandbox-injector-tls, from a CA issuer', () => {
    const certificate = find(overlay, 'Certificate', 'sandbox-injector');
    expect(certificate.apiVersion).toBe('cert-manager.io/v1');
    expect(at(certificate, 'spec', 'secretName')).toBe('sandbox-injector-tls');
    expect(at(certificate, 'spec', 'dnsNames')).toEqual([
      'sandbox-injector',
      'sandbox-injector.sandbox-injector-system',
      'sandbox-injector.sandbox-injector-system.svc',
      'sandbox-injector.sandbox-injector-system.svc.cluster.local',
    ]);
    expect(at(certificate, 'spec', 'issuerRef')).toEqual({
      group: 'cert-manager.io',
      kind: 'Issuer',
      name: 'sandbox-injector-ca',
    });
    expect(at(find(overlay, 'Issuer', 'sandbox-injector-ca'), 'spec', 'ca', 'secretName')).toBe(
      at(find(overlay, 'Certificate', 'sandbox-injector-ca'), 'spec', 'secretName'),
    );
    expect(at(find(overlay, 'Certificate', 'sandbox-injector-ca'), 'spec', 'isCA')).toBe(true);
    expect(at(find(overlay, 'Issuer', 'sandbox-injector-selfsigned'), 'spec')).toEqual({ selfSigned: {} });
  });

  it('points the caBundle injection at the Certificate and serves the mounted Secret from files', () => {
    const mwc = find(overlay, 'MutatingWebhookConfiguration', 'sandbox-injector');
    expect(mwc.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(
      'sandbox-injector-system/sandbox-injector',
    );
    // The rest of the webhook is the base's.
    expect(at(mwc, 'webhooks')).toEqual(at(find(base, 'MutatingWebhookConfiguration', 'sandbox-injector'), 'webhooks'));

    const pod = at(find(overlay, 'Deployment', 'sandbox-injector'), 'spec', 'template', 'spec');
    const args = at(pod, 'containers', 0, 'args');
    expect(args).toEqual(
      expect.arrayContaining([
        'serve',
        '--cert-mode=files',
        '--tls-cert-file=/var/run/sandbox-injector/tls/tls.crt',
        '--tls-key-file=/var/run/sandbox-injector/tls/tls.key',
      ]),
    );
    expect(JSON.stringify(args)).not.toMatch(/self-managed|--cert-dir|--cert-secret-name|--webhook-config-name/);
    // Every other flag of the base (trusted creators, limits, drain) is kept, in order.
    const baseArgs = at(
      find(base, 'Deployment', 'sandbox-injector'),
      'spec',
      'template',
      'spec',
      'containers',
      0,
      'args',
    ) as string[];
    const certFlag =
      /^--(cert-mode|cert-namespace|cert-secret-name|service-name|webhook-config-name|cert-dir|tls-cert-file|tls-key-file)=/;
    expect((args as string[]).filter((a) => !certFlag.test(a))).toEqual(baseArgs.filter((a) => !certFlag.test(a)));
    expect(args).toContain('--trusted-creators=system:serviceaccount:sandbox-system:sandbox-controller-manager');
    expect(at(pod, 'containers', 0, 'volumeMounts')).toEqual([
      { name: 'tls', mountPath: '/var/run/sandbox-injector/tls', readOnly: true },
    ]);
    // The wrapper image stays the injector's own.
    const baseEnv = at(
      find(base, 'Deployment', 'sandbox-injector'),
      'spec',
      'template',
      'spec',
      'containers',
      0,
      'env',
    );
    expect(at(pod, 'containers', 0, 'env')).toEqual(baseEnv);
    expect(at(pod, 'volumes')).toEqual([
      { name: 'tls', secret: { secretName: 'sandbox-injector-tls', defaultMode: 0o440 } },
    ]);
  });

  it('is accepted by the API server, except the cert-manager kinds it does not know', async () => {
    const c = cluster();
    const plain = overlay.filter((o) => !o.apiVersion.startsWith('cert-manager.io/'));
    const result = await c.kubectl(['apply', '--server-side', '--dry-run=server', '--field-manager=e2e', '-f', '-'], {
      input: asYaml(plain),
    });
    expect(result.stderr).toBe('');
    expect(result.stdout.trim().split('\n')).toHaveLength(plain.length);
  });
});

describe('RBAC of the sandbox-injector service account', () => {
  beforeAll(async () => {
    const c = cluster();
    const rbacKinds = new Set([
      'Namespace',
      'ServiceAccount',
      'Role',
      'RoleBinding',
      'ClusterRole',
      'ClusterRoleBinding',
    ]);
    await c.kubectlOk(['apply', '--server-side', '-f', '-'], {
      input: asYaml(base.filter((o) => rbacKinds.has(o.kind))),
    });
  });

  const canI = async (args: string[]): Promise<'yes' | 'no'> => {
    const r = await cluster().kubectl(['auth', 'can-i', ...args, `--as=${SA}`]);
    const answer = r.stdout.trim();
    if (!((r.code === 0 && answer === 'yes') || (r.code === 1 && answer === 'no'))) {
      throw new Error(`kubectl auth can-i ${args.join(' ')}: exit ${r.code}, '${answer}', ${r.stderr}`);
    }
    return answer;
  };

  const allowed: string[][] = [
    ['get', 'configmaps/sandbox-injection-config', '-n', UPSTREAM_NS],
    ['list', 'configmaps/sandbox-injection-config', '-n', UPSTREAM_NS],
    ['watch', 'configmaps/sandbox-injection-config', '-n', UPSTREAM_NS],
    ['get', 'secrets/sandbox-injector-tls', '-n', NS],
    ['update', 'secrets/sandbox-injector-tls', '-n', NS],
    ['list', 'sandboxes.agents.kruise.io', '--all-namespaces'],
    ['watch', 'sandboxes.agents.kruise.io', '--all-namespaces'],
    ['get', 'sandboxes.agents.kruise.io', '-n', 'team-a'],
    ['get', 'mutatingwebhookconfigurations/sandbox-injector'],
    ['update', 'mutatingwebhookconfigurations/sandbox-injector'],
  ];
  const denied: string[][] = [
    ['get', 'configmaps/other', '-n', UPSTREAM_NS],
    ['list', 'configmaps', '-n', UPSTREAM_NS],
    ['get', 'configmaps/sandbox-injection-config', '-n', 'default'],
    ['get', 'configmaps/sandbox-injection-config', '-n', NS],
    ['update', 'configmaps/sandbox-injection-config', '-n', UPSTREAM_NS],
    ['get', 'secrets/other', '-n', NS],
    ['list', 'secrets', '-n', NS],
    ['watch', 'secrets', '-n', NS],
    ['delete', 'secrets/sandbox-injector-tls', '-n', NS],
    ['create', 'secrets', '-n', 'default'],
    // The install makes the certificate Secret: the webhook creates none, not even that one.
    ['create', 'secrets', '-n', NS],
    ['create', 'secrets/sandbox-injector-tls', '-n', NS],
    ['list', 'pods', '--all-namespaces'],
    ['get', 'pods', '-n', NS],
    ['create', 'deployments.apps', '-n', NS],
    ['update', 'sandboxes.agents.kruise.io', '-n', 'team-a'],
    ['patch', 'mutatingwebhookconfigurations/sandbox-injector'],
    ['patch', 'mutatingwebhookconfigurations/other'],
    ['create', 'mutatingwebhookconfigurations'],
    ['delete', 'mutatingwebhookconfigurations/sandbox-injector'],
    ['patch', 'validatingwebhookconfigurations/sandbox-injector'],
    ['delete', 'namespaces/sandbox-system'],
    ['delete', 'namespaces/sandbox-injector-system'],
    ['patch', 'namespaces/sandbox-system'],
    ['get', 'deployments.apps', '-n', UPSTREAM_NS],
    ['create', 'serviceaccounts/token', '-n', NS],
  ];

  it.each(allowed)('can %s %s', async (...args) => {
    expect(await canI(args)).toBe('yes');
  });

  it.each(denied)('can not %s %s', async (...args) => {
    expect(await canI(args)).toBe('no');
  });

  it('lists and watches the one ConfigMap through a metadata.name field selector, and nothing wider', async () => {
    const c = cluster();
    await c.kubectlOk([
      'apply',
      '-f',
      path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml'),
    ]);
    const byName = await c.kubectl([
      'get',
      'configmaps',
      '-n',
      UPSTREAM_NS,
      '--field-selector=metadata.name=sandbox-injection-config',
      '-o',
      'name',
      `--as=${SA}`,
    ]);
    expect([byName.code, byName.stdout.trim()]).toEqual([0, 'configmap/sandbox-injection-config']);
    const all = await c.kubectl(['get', 'configmaps', '-n', UPSTREAM_NS, `--as=${SA}`]);
    expect(all.code).not.toBe(0);
    expect(all.stderr).toMatch(/forbidden/);
  });

  it('keeps only the reading rights with the cert-manager overlay', async () => {
    const c = cluster();
    // What `kubectl apply -k` of the overlay after the base leaves behind once the -certs objects are pruned.
    for (const kind of ['rolebinding', 'role']) await c.kubectlOk(['delete', kind, 'sandbox-injector-certs', '-n', NS]);
    for (const kind of ['clusterrolebinding', 'clusterrole'])
      await c.kubectlOk(['delete', kind, 'sandbox-injector-certs']);
    const rbac = overlay.filter((o) => ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind));
    await c.kubectlOk(['apply', '--server-side', '-f', '-'], { input: asYaml(rbac) });

    expect(await canI(['get', 'configmaps/sandbox-injection-config', '-n', UPSTREAM_NS])).toBe('yes');
    expect(await canI(['watch', 'sandboxes.agents.kruise.io', '--all-namespaces'])).toBe('yes');
    expect(await canI(['get', 'secrets/sandbox-injector-tls', '-n', NS])).toBe('no');
    expect(await canI(['create', 'secrets', '-n', NS])).toBe('no');
    expect(await canI(['patch', 'mutatingwebhookconfigurations/sandbox-injector'])).toBe('no');
  });
});
