// Installing beside OpenKruise Agents, on a real kube-apiserver: a stand-in of upstream's install (its namespace
// sandbox-system without Pod Security labels, a controller Deployment, its ServiceAccount and an injection
// ConfigMap of its own) is made first. Then kustomize and Helm each install and uninstall as the docs say, and
// upstream's objects must come out of it byte for byte the same (resourceVersion included: the API server bumps it
// on any write), and nothing labelled as ours may be left after an uninstall.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { CHART, makeHelm, type Helm } from './support/helm.js';
import { at } from './support/json.js';

const UPSTREAM = 'sandbox-system';
const OURS = 'sandbox-injector-system';
const OUR_LABEL = 'app.kubernetes.io/name=sandbox-injector';
const MANIFESTS = path.join(repoRoot, 'manifests');
const COMPONENTS = path.join(MANIFESTS, 'components');

const UPSTREAM_OBJECTS = [
  {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: UPSTREAM,
      labels: { 'control-plane': 'controller-manager' },
      annotations: { 'example.com/owner': 'openkruise-agents' },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'sandbox-controller-manager', namespace: UPSTREAM },
  },
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'sandbox-controller-manager', namespace: UPSTREAM },
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'control-plane': 'sandbox-controller-manager' } },
      template: {
        metadata: { labels: { 'control-plane': 'sandbox-controller-manager' } },
        // Like upstream's: no securityContext, so a restricted label on its namespace would refuse its pods.
        spec: {
          serviceAccountName: 'sandbox-controller-manager',
          containers: [{ name: 'manager', image: 'registry.example.com/openkruise-agents/manager:v0.1.0' }],
        },
      },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'sandbox-injection-config', namespace: UPSTREAM },
    data: { 'upstream-runtime': '{"csiSidecar":[{"name":"upstream-sidecar","image":"registry.example.com/up:v9"}]}' },
  },
];

const UPSTREAM_REFS = [
  ['namespace', UPSTREAM],
  ['-n', UPSTREAM, 'serviceaccount', 'sandbox-controller-manager'],
  ['-n', UPSTREAM, 'deployment', 'sandbox-controller-manager'],
  ['-n', UPSTREAM, 'configmap', 'sandbox-injection-config'],
];

let current: TestCluster | undefined;
let helm: Helm | undefined;
let work = '';
let listable: string[] = [];
let before: string[] = [];

function cluster(): TestCluster {
  if (current === undefined) throw new Error('cluster not started');
  return current;
}

function helmTool(): Helm {
  if (helm === undefined) throw new Error('helm not made');
  return helm;
}

/** Upstream's objects as the API server returns them, one JSON text each. */
async function upstreamState(): Promise<string[]> {
  return Promise.all(UPSTREAM_REFS.map((ref) => cluster().kubectlOk(['get', ...ref, '-o', 'json'])));
}

/** Every object labelled as ours, in any namespace or none, of every kind the API server can list. */
async function ourObjects(): Promise<string[]> {
  const out = await cluster().kubectlOk(['get', listable.join(','), '-A', '-l', OUR_LABEL, '-o', 'json']);
  const items = at(JSON.parse(out) as unknown, 'items');
  if (!Array.isArray(items)) throw new Error(`no items in ${out.slice(0, 200)}`);
  return items
    .map((item: unknown) => {
      const namespace = at(item, 'metadata', 'namespace');
      const where = typeof namespace === 'string' ? `${namespace}/` : '';
      return `${String(at(item, 'kind'))}/${where}${String(at(item, 'metadata', 'name'))}`;
    })
    .sort();
}

/**
 * No controller-manager runs here: a deleted namespace stays Terminating until the namespace controller has
 * emptied it and removed its finalizer. The test checks it is empty of ours, then takes that last step itself.
 */
async function finishNamespaceDeletion(name: string): Promise<void> {
  const found = await cluster().kubectl(['get', 'namespace', name, '-o', 'json']);
  if (found.code !== 0) return;
  const namespace = JSON.parse(found.stdout) as Record<string, unknown>;
  const finalized = { ...namespace, spec: { finalizers: [] } };
  await cluster().kubectlOk(['replace', '--raw', `/api/v1/namespaces/${name}/finalize`, '-f', '-'], {
    input: JSON.stringify(finalized),
  });
  await cluster().kubectlOk(['wait', '--for=delete', `namespace/${name}`, '--timeout=30s']);
}

beforeAll(async () => {
  current = await startCluster();
  const c = cluster();
  await c.installSandboxCrd();
  for (const object of UPSTREAM_OBJECTS) await c.applyObject(object);
  before = await upstreamState();
  const resources = await c.kubectlOk(['api-resources', '--verbs=list', '-o', 'name']);
  // Events are written by the API server's own clients at any time and are never ours.
  listable = resources
    .split('\n')
    .filter((name) => name !== '' && name !== 'events' && name !== 'events.events.k8s.io');
  helm = makeHelm(c.kubeconfigPath);
  work = mkdtempSync(path.join(tmpdir(), 'si-e2e-beside-'));
});

afterAll(async () => {
  helm?.dispose();
  if (work !== '') rmSync(work, { recursive: true, force: true });
  await current?.stop();
});

describe('the stand-in of upstream', () => {
  it('is a namespace without Pod Security labels, a Deployment, a ServiceAccount and a ConfigMap of its own', () => {
    const namespace = JSON.parse(before[0] ?? '{}') as unknown;
    expect(Object.keys(at(namespace, 'metadata', 'labels') as object).sort()).toEqual([
      'control-plane',
      'kubernetes.io/metadata.name',
    ]);
  });
});

/** Our Role and RoleBinding in upstream's namespace, which read the injection ConfigMap there. */
const configMapReaders = (withDeliverEnv: boolean): string[] => {
  const names = withDeliverEnv ? ['sandbox-injector', 'sandbox-injector-deliver-env'] : ['sandbox-injector'];
  return ['Role', 'RoleBinding'].flatMap((kind) => names.map((name) => `${kind}/${UPSTREAM}/${name}`));
};

describe.each([
  { name: 'manifests/', dir: MANIFESTS },
  {
    name: 'manifests/ with components deliver-env, deliver-env-runtime-tls and pod-ownership-policy',
    dir: '',
    components: ['deliver-env', 'deliver-env-runtime-tls', 'pod-ownership-policy'],
  },
])('kustomize: $name', ({ dir, components }) => {
  // A kustomization of the user's own, as the components' comments show: manifests/ plus components.
  const target = (): string => {
    if (components === undefined) return dir;
    writeFileSync(
      path.join(work, 'kustomization.yaml'),
      JSON.stringify({
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: [path.relative(work, MANIFESTS)],
        components: components.map((name) => path.relative(work, path.join(COMPONENTS, name))),
      }),
    );
    return work;
  };

  it('installs into sandbox-injector-system, with only the ConfigMap readers in sandbox-system', async () => {
    await cluster().kubectlOk(['apply', '-k', target()]);
    const ours = await ourObjects();
    expect(ours).toContain(`Namespace/${OURS}`);
    expect(ours).toContain(`Deployment/${OURS}/sandbox-injector`);
    expect(ours).toContain(`Secret/${OURS}/sandbox-injector-tls`);
    // The webhook's reader of the injection ConfigMap, and deliver-env's when it is installed.
    expect(ours.filter((id) => id.includes(`/${UPSTREAM}/`))).toEqual(
      configMapReaders(components?.includes('deliver-env') === true),
    );
    expect(ours).not.toContain(`Namespace/${UPSTREAM}`);
    // The webhook may read upstream's ConfigMap, by name, and nothing else there.
    const as = ['--as', `system:serviceaccount:${OURS}:sandbox-injector`];
    for (const verb of ['get', 'list', 'watch']) {
      expect(
        await cluster().kubectlOk([
          'auth',
          'can-i',
          verb,
          'configmaps/sandbox-injection-config',
          '-n',
          UPSTREAM,
          ...as,
        ]),
      ).toBe('yes\n');
    }
    const other = await cluster().kubectl(['auth', 'can-i', 'get', 'configmaps/other', '-n', UPSTREAM, ...as]);
    expect(other.stdout).toBe('no\n');
    if (components?.includes('deliver-env') === true) {
      // So may deliver-env, which judges pool pods against it: read only, and that one ConfigMap.
      const deliverAs = ['--as', `system:serviceaccount:${OURS}:sandbox-injector-deliver-env`];
      const canI = async (verb: string, what: string): Promise<string> =>
        (await cluster().kubectl(['auth', 'can-i', verb, what, '-n', UPSTREAM, ...deliverAs])).stdout;
      expect(await canI('watch', 'configmaps/sandbox-injection-config')).toBe('yes\n');
      expect(await canI('update', 'configmaps/sandbox-injection-config')).toBe('no\n');
      expect(await canI('get', 'configmaps/other')).toBe('no\n');
    }
    expect(await upstreamState()).toEqual(before);
  });

  it('uninstalls with kubectl delete -k: ours gone, upstream untouched', async () => {
    await cluster().kubectlOk(['delete', 'mutatingwebhookconfiguration', 'sandbox-injector']);
    // --wait=false: with no namespace controller here, our Namespace stays Terminating until the test finishes it.
    await cluster().kubectlOk(['delete', '-k', target(), '--ignore-not-found', '--wait=false']);
    expect((await ourObjects()).filter((id) => id !== `Namespace/${OURS}`)).toEqual([]);
    await finishNamespaceDeletion(OURS);
    expect(await ourObjects()).toEqual([]);
    expect(await upstreamState()).toEqual(before);
  });
});

describe.each([
  { name: 'defaults', set: [] as string[] },
  { name: 'deliver-env on, cert-manager off', set: ['--set', 'deliverEnv.enabled=true'] },
])('helm: $name', ({ set }) => {
  it('installs into the release namespace, with only the ConfigMap readers in sandbox-system', async () => {
    // As the chart README says: the namespace first, labelled restricted, then the release into it.
    await cluster().kubectlOk(['create', 'namespace', OURS]);
    await cluster().kubectlOk([
      'label',
      'namespace',
      OURS,
      'pod-security.kubernetes.io/enforce=restricted',
      'pod-security.kubernetes.io/warn=restricted',
    ]);
    await helmTool().runOk(['install', 'sandbox-injector', CHART, '--namespace', OURS, ...set]);
    const ours = await ourObjects();
    expect(ours).toContain(`Deployment/${OURS}/sandbox-injector`);
    // The webhook's reader of the injection ConfigMap, and deliver-env's when it is installed.
    expect(ours.filter((id) => id.includes(`/${UPSTREAM}/`))).toEqual(
      configMapReaders(set.includes('deliverEnv.enabled=true')),
    );
    expect(await upstreamState()).toEqual(before);
  });

  it('uninstalls with helm uninstall: ours gone, upstream untouched', async () => {
    await helmTool().runOk(['uninstall', 'sandbox-injector', '--namespace', OURS]);
    expect(await ourObjects()).toEqual([]);
    await cluster().kubectlOk(['delete', 'namespace', OURS, '--wait=false']);
    await finishNamespaceDeletion(OURS);
    expect(await upstreamState()).toEqual(before);
  });
});
