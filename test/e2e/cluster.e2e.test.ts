// Smoke test of the e2e test cluster itself: a real etcd + kube-apiserver,
// driven with the real kubectl. Every assertion reads back what the apiserver
// stored or answered, so a broken build, a wrong flag or a missing admission
// plugin makes it fail.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { at } from './support/json.js';

const CRD_PATH = path.join(repoRoot, 'test', 'fixtures', 'e2e', 'sandbox-crd.yaml');
const NS = 'e2e-smoke';

let current: TestCluster | undefined;

function cluster(): TestCluster {
  if (current === undefined) throw new Error('cluster not started');
  return current;
}

async function getJson(args: string[]): Promise<unknown> {
  const out = await cluster().kubectlOk([...args, '-o', 'json']);
  return JSON.parse(out) as unknown;
}

function sandbox(name: string, spec: Record<string, unknown>): string {
  return toYaml({ apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', metadata: { name, namespace: NS }, spec });
}

beforeAll(async () => {
  current = await startCluster();
  console.info(`e2e cluster ready at ${current.server} in ${current.startupMs} ms (${current.dir})`);
});

afterAll(async () => {
  await current?.stop();
});

describe('e2e test cluster', () => {
  it('serves the pinned Kubernetes version over TLS on loopback', async () => {
    const c = cluster();
    expect(c.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const v = JSON.parse(await c.kubectlOk(['version', '-o', 'json'])) as unknown;
    const server = at(v, 'serverVersion', 'gitVersion');
    expect(server).toMatch(/^v1\.\d+\.\d+$/);
    expect(at(v, 'clientVersion', 'gitVersion')).toBe(server);
  });

  it('establishes the Sandbox CRD', async () => {
    const c = cluster();
    await c.kubectlOk(['apply', '-f', CRD_PATH]);
    await c.kubectlOk(['wait', '--for=condition=Established', 'crd/sandboxes.agents.kruise.io', '--timeout=60s']);
    const crd = await getJson(['get', 'crd', 'sandboxes.agents.kruise.io']);
    expect(at(crd, 'spec', 'group')).toBe('agents.kruise.io');
    expect(at(crd, 'spec', 'scope')).toBe('Namespaced');
    expect(at(crd, 'spec', 'versions', 0, 'name')).toBe('v1alpha1');
    const resources = await c.kubectlOk(['api-resources', '--api-group=agents.kruise.io', '-o', 'name']);
    expect(resources.trim()).toBe('sandboxes.agents.kruise.io');
  });

  it('refuses a pod until the namespace has its default ServiceAccount (no controller-manager)', async () => {
    const c = cluster();
    await c.kubectlOk(['create', 'namespace', NS]);
    const r = await c.kubectl(['-n', NS, 'run', 'early', '--image=busybox:1.36', '--restart=Never']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/serviceaccount "default" not found/);
    await c.ensureNamespace(NS);
    const sa = await getJson(['-n', NS, 'get', 'serviceaccount', 'default']);
    expect(at(sa, 'metadata', 'name')).toBe('default');
  });

  it('stores a Sandbox, pruning unknown spec fields and keeping the template as given', async () => {
    const c = cluster();
    const template = {
      metadata: { labels: { app: 'agent' } },
      spec: { containers: [{ name: 'main', image: 'busybox:1.36', args: ['sleep', '3600'] }] },
    };
    const manifest = sandbox('sb1', {
      runtimes: [{ name: 'agent-runtime' }, { name: 'csi' }],
      envVarsInjectionPolicy: 'Auto',
      template,
      notInSchema: true,
    });
    // kubectl asks for strict server-side field validation by default ...
    const strict = await c.kubectl(['apply', '-f', '-'], { input: manifest });
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toContain('unknown field "spec.notInSchema"');
    // ... without it the apiserver prunes what the structural schema lacks.
    await c.kubectlOk(['apply', '--validate=ignore', '-f', '-'], { input: manifest });
    const sb = await getJson(['-n', NS, 'get', 'sandbox', 'sb1']);
    expect(at(sb, 'apiVersion')).toBe('agents.kruise.io/v1alpha1');
    expect(at(sb, 'spec', 'runtimes')).toEqual([{ name: 'agent-runtime' }, { name: 'csi' }]);
    expect(at(sb, 'spec', 'envVarsInjectionPolicy')).toBe('Auto');
    expect(at(sb, 'spec', 'template')).toEqual(template);
    expect(at(sb, 'spec', 'notInSchema')).toBeUndefined();
  });

  it('rejects a Sandbox that breaks the schema', async () => {
    const c = cluster();
    const badEnum = await c.kubectl(['apply', '-f', '-'], {
      input: sandbox('sb-bad', { envVarsInjectionPolicy: 'Sometimes' }),
    });
    expect(badEnum.code).not.toBe(0);
    expect(badEnum.stderr).toContain('spec.envVarsInjectionPolicy');
    expect(badEnum.stderr).toContain('Sometimes');
    const noName = await c.kubectl(['apply', '-f', '-'], { input: sandbox('sb-bad', { runtimes: [{}] }) });
    expect(noName.code).not.toBe(0);
    expect(noName.stderr).toContain('spec.runtimes[0].name');
    const missing = await c.kubectl(['-n', NS, 'get', 'sandbox', 'sb-bad']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/NotFound|not found/);
  });

  it('stores a Pod through the admission chain without running it', async () => {
    const c = cluster();
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p1', namespace: NS, labels: { app: 'agent' } },
      spec: { containers: [{ name: 'main', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
    };
    await c.kubectlOk(['create', '-f', '-'], { input: toYaml(pod) });
    const got = await getJson(['-n', NS, 'get', 'pod', 'p1']);
    expect(at(got, 'metadata', 'labels', 'app')).toBe('agent');
    expect(at(got, 'spec', 'containers', 0, 'command')).toEqual(['sleep', '3600']);
    // Added by the ServiceAccount admission plugin.
    expect(at(got, 'spec', 'serviceAccountName')).toBe('default');
    const volumes = at(got, 'spec', 'volumes');
    expect(Array.isArray(volumes)).toBe(true);
    const names = (volumes as unknown[]).map((v) => at(v, 'name'));
    expect(names.some((n) => typeof n === 'string' && n.startsWith('kube-api-access-'))).toBe(true);
    // Defaulted by the apiserver; nothing schedules it.
    expect(at(got, 'spec', 'restartPolicy')).toBe('Always');
    expect(at(got, 'spec', 'nodeName')).toBeUndefined();
    expect(at(got, 'status', 'phase')).toBe('Pending');
  });

  it('supports server dry-run, impersonation with RBAC, and kustomize', async () => {
    const c = cluster();
    const dry = await getJson(['-n', NS, 'create', 'configmap', 'dry', '--from-literal=k=v', '--dry-run=server']);
    expect(at(dry, 'data', 'k')).toBe('v');
    expect(at(dry, 'metadata', 'uid')).toEqual(expect.any(String));
    const notStored = await c.kubectl(['-n', NS, 'get', 'configmap', 'dry']);
    expect(notStored.code).not.toBe(0);

    const admin = await c.kubectl(['auth', 'can-i', 'create', 'pods', '-n', NS]);
    expect([admin.code, admin.stdout.trim()]).toEqual([0, 'yes']);
    const sa = await c.kubectl([
      'auth',
      'can-i',
      'create',
      'pods',
      '-n',
      NS,
      `--as=system:serviceaccount:${NS}:default`,
    ]);
    expect([sa.code, sa.stdout.trim()]).toEqual([1, 'no']);

    const kdir = path.join(c.dir, 'kustomize');
    mkdirSync(kdir);
    writeFileSync(
      path.join(kdir, 'kustomization.yaml'),
      toYaml({ namespace: NS, labels: [{ pairs: { team: 'e2e' } }], resources: ['cm.yaml'] }),
    );
    writeFileSync(
      path.join(kdir, 'cm.yaml'),
      toYaml({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kustomized' }, data: { a: 'b' } }),
    );
    const rendered = await c.kubectlOk(['kustomize', kdir]);
    expect(rendered).toContain(`namespace: ${NS}`);
    expect(rendered).toContain('team: e2e');
    await c.kubectlOk(['apply', '-k', kdir]);
    const cm = await getJson(['-n', NS, 'get', 'configmap', 'kustomized']);
    expect(at(cm, 'metadata', 'labels', 'team')).toBe('e2e');
  });

  it('stop() ends both processes and removes the temp dir', async () => {
    const c = cluster();
    const dir = c.dir;
    expect(existsSync(path.join(dir, 'kubeconfig'))).toBe(true);
    await c.stop();
    expect(existsSync(dir)).toBe(false);
    await expect(fetch(`${c.server}/readyz`, { signal: AbortSignal.timeout(5000) })).rejects.toThrow();
    await expect(fetch(`${c.etcdUrl}/health`, { signal: AbortSignal.timeout(5000) })).rejects.toThrow();
  });
});
