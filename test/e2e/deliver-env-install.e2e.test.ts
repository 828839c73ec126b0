// How deliver-env is installed: manifests/components/deliver-env as docs/deliver-env.md says, and the chart with
// deliverEnv.enabled, rendered by the real kubectl and helm and checked by the real kube-apiserver (server-side
// dry-run with strict field validation, Pod Security "restricted"). The RBAC's sufficiency is proven in
// deliver-env.e2e.test.ts, where the controller runs as this service account with these rules only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byKey, releaseObjects } from './support/chart-objects.js';
import { startCluster, type TestCluster } from './support/cluster.js';
import { asYaml, kustomize, MANIFESTS, objectId, renderWithComponents, type KubeObject } from './support/components.js';
import { CHART, makeHelm, RELEASE, type Helm } from './support/helm.js';
import { at } from './support/json.js';

const NAME = 'sandbox-injector-deliver-env';

let cluster: TestCluster;
let helm: Helm;
let base: KubeObject[];
let withComponent: KubeObject[];

beforeAll(async () => {
  cluster = await startCluster();
  helm = makeHelm(cluster.kubeconfigPath);
  base = await kustomize(cluster.binDir, MANIFESTS);
  withComponent = await renderWithComponents(cluster.binDir, ['deliver-env']);
});

afterAll(async () => {
  helm?.dispose();
  await cluster?.stop();
});

const added = (): KubeObject[] => {
  const before = new Set(base.map(objectId));
  return withComponent.filter((o) => !before.has(objectId(o)));
};

describe('manifests/components/deliver-env', () => {
  it('adds only its own objects, labelled like the rest, and changes none of the webhook', () => {
    expect(added().map(objectId).sort()).toEqual(
      [
        `ClusterRole/${NAME}`,
        `ClusterRoleBinding/${NAME}`,
        `Deployment/sandbox-injector-system/${NAME}`,
        `PodDisruptionBudget/sandbox-injector-system/${NAME}`,
        `Role/sandbox-injector-system/${NAME}`,
        `RoleBinding/sandbox-injector-system/${NAME}`,
        `Role/sandbox-system/${NAME}`,
        `RoleBinding/sandbox-system/${NAME}`,
        `ServiceAccount/sandbox-injector-system/${NAME}`,
      ].sort(),
    );
    const before = new Map(base.map((o) => [objectId(o), JSON.stringify(o)]));
    expect(
      withComponent.filter((o) => before.has(objectId(o)) && before.get(objectId(o)) !== JSON.stringify(o)),
    ).toEqual([]);
    for (const o of added())
      expect(o.metadata.labels, objectId(o)).toMatchObject({ 'app.kubernetes.io/name': 'sandbox-injector' });
  });

  it('grants reading Sandboxes and pods, creating Events, the one Lease and reading the one ConfigMap; nothing else', () => {
    const byId = new Map(added().map((o) => [objectId(o), o]));
    expect(at(byId.get(`ClusterRole/${NAME}`), 'rules')).toEqual([
      { apiGroups: ['agents.kruise.io'], resources: ['sandboxes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ]);
    expect(at(byId.get(`Role/sandbox-injector-system/${NAME}`), 'rules')).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [NAME], verbs: ['get', 'update'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    ]);
    expect(at(byId.get(`Role/sandbox-system/${NAME}`), 'rules')).toEqual([
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['sandbox-injection-config'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    const args = at(
      byId.get(`Deployment/sandbox-injector-system/${NAME}`),
      'spec',
      'template',
      'spec',
      'containers',
      0,
      'args',
    );
    expect(args).toEqual(
      expect.arrayContaining([
        'deliver-env',
        '--lease-namespace=sandbox-injector-system',
        `--lease-name=${NAME}`,
        '--config-namespace=sandbox-system',
        '--config-name=sandbox-injection-config',
      ]),
    );
    expect((args as string[]).some((a) => a.startsWith('--replace-pool-pods'))).toBe(false);
  });

  it('is accepted by kube-apiserver under Pod Security "restricted" and strict field validation', async () => {
    await cluster.kubectlOk(['apply', '-f', '-', '--server-side', '--field-manager=e2e'], {
      input: asYaml(base.filter((o) => o.kind === 'Namespace')),
    });
    await cluster.ensureNamespace('sandbox-system');
    await cluster.kubectlOk([
      'label',
      'namespace',
      'sandbox-injector-system',
      'pod-security.kubernetes.io/enforce=restricted',
      '--overwrite',
    ]);
    const result = await cluster.kubectl(
      ['apply', '-f', '-', '--server-side', '--dry-run=server', '--validate=strict', '--field-manager=e2e'],
      {
        input: asYaml(added()),
      },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('manifests/components/deliver-env-pool-replacement', () => {
  it('adds --replace-pool-pods=missing,stale and deleting pods, nothing else', async () => {
    const both = await renderWithComponents(cluster.binDir, ['deliver-env', 'deliver-env-pool-replacement']);
    const before = new Map(withComponent.map((o) => [objectId(o), o]));
    const extra = both.filter((o) => !before.has(objectId(o)));
    expect(extra.map(objectId).sort()).toEqual([
      `ClusterRole/${NAME}-pool-replacement`,
      `ClusterRoleBinding/${NAME}-pool-replacement`,
    ]);
    expect(
      at(
        extra.find((o) => o.kind === 'ClusterRole'),
        'rules',
      ),
    ).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['delete'] }]);
    const changed = both.filter(
      (o) => before.has(objectId(o)) && JSON.stringify(before.get(objectId(o))) !== JSON.stringify(o),
    );
    expect(changed.map(objectId)).toEqual([`Deployment/sandbox-injector-system/${NAME}`]);
    expect((at(changed[0], 'spec', 'template', 'spec', 'containers', 0, 'args') as string[]).at(-1)).toBe(
      '--replace-pool-pods=missing,stale',
    );
  });
});

describe('the chart with deliverEnv.enabled', () => {
  it('renders nothing of deliver-env by default', async () => {
    const objects = await helm.template({});
    expect(objects.filter((o) => o.metadata.name === NAME)).toEqual([]);
  });

  it('renders the same objects as the component, apart from Helm standard labels', async () => {
    const chart = releaseObjects(await helm.template({ deliverEnv: { enabled: true } }));
    const component = byKey(added());
    for (const [key, object] of component) expect(chart.get(key), key).toEqual(object);
  });

  it('appends deliverEnv.extraArgs and sets the replicas', async () => {
    const objects = await helm.template({
      deliverEnv: { enabled: true, replicas: 3, extraArgs: ['--file-user=user'] },
    });
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === NAME);
    expect(at(deployment, 'spec', 'replicas')).toBe(3);
    expect((at(deployment, 'spec', 'template', 'spec', 'containers', 0, 'args') as string[]).at(-1)).toBe(
      '--file-user=user',
    );
  });

  it('with deliverEnv.replacePoolPods, passes the flag and may delete pods; without it, neither', async () => {
    const rulesAndArgs = async (values: Record<string, unknown>) => {
      const objects = await helm.template({ deliverEnv: { enabled: true, ...values } });
      const role = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === NAME);
      const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === NAME);
      return {
        deletes: (at(role, 'rules') as { verbs: string[] }[]).some((r) => r.verbs.includes('delete')),
        args: at(deployment, 'spec', 'template', 'spec', 'containers', 0, 'args') as string[],
      };
    };
    const off = await rulesAndArgs({});
    expect(off.deletes).toBe(false);
    expect(off.args.some((a) => a.startsWith('--replace-pool-pods'))).toBe(false);
    const on = await rulesAndArgs({ replacePoolPods: 'stale' });
    expect(on.deletes).toBe(true);
    expect(on.args).toContain('--replace-pool-pods=stale');
    const refused = await helm.run([
      'template',
      RELEASE,
      CHART,
      ...helm.valuesArgs({ deliverEnv: { replacePoolPods: 'all' } }),
    ]);
    expect(refused.code).not.toBe(0);
  });

  // The webhook mounts the env folder at the one path the injection rules give it: deliver-env aimed anywhere
  // else would never release a wrapped command, so the chart has one value for both and takes no other.
  it.each([
    [{ envDir: '/srv/env', deliverEnv: { enabled: true } }, "at '/envDir'"],
    [{ deliverEnv: { enabled: true, extraArgs: ['--env-dir=/srv/env'] } }, '--env-dir is envDir'],
    [{ deliverEnv: { enabled: true, extraArgs: ['--env-dir', '/srv/env'] } }, '--env-dir is envDir'],
  ])('refuses another env folder for deliver-env: %j', async (values, message) => {
    const result = await helm.run(['template', RELEASE, CHART, ...helm.valuesArgs(values)]);
    expect(result.stderr).toContain(message);
    expect(result.code).not.toBe(0);
  });
});
