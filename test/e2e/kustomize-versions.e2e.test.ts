// Every kustomization under manifests/ renders the same objects with the machine's own kubectl (1.32 here, with
// kustomize 5.5) as with the project's kubectl (test/e2e/cluster/build.sh kube, a newer kustomize). Users run
// `kubectl apply -k` with whatever kubectl they have, and kustomize 5.5 and 5.6 crash on some inputs that newer
// versions take (several `$patch: delete` documents in one file). The kustomizations are found by walking the
// tree, so a component added later is covered too: each Kustomization is rendered as it is, each Component on
// top of manifests/ as the docs show, and all components together on top of each Kustomization.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml, parseDocument } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveToolDir } from './support/binaries.js';
import { kustomize, MANIFESTS, objectId, renderWithComponentDirs, type KubeObject } from './support/components.js';
import { at } from './support/json.js';
import { runKubectl } from './support/kubectl.js';

const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
/** Where this project's machines have their own kubectl; `which kubectl` is asked when it is not there. */
const MACHINE_KUBECTL = '/usr/bin/kubectl';
const ADDRESSES_EXAMPLE = path.join(MANIFESTS, 'components', 'network-policies', 'api-server-addresses.example.yaml');

interface Kustomization {
  dir: string;
  kind: 'Kustomization' | 'Component';
}

/** Every folder under manifests/ with a kustomization file, and whether it is a Component. */
function findKustomizations(dir: string): Kustomization[] {
  const entries = readdirSync(dir, { withFileTypes: true });
  const own = entries.find((e) => e.isFile() && KUSTOMIZATION_FILES.includes(e.name));
  const found: Kustomization[] = [];
  if (own !== undefined) {
    const kind = at(parseYaml(readFileSync(path.join(dir, own.name), 'utf8')), 'kind');
    found.push({ dir, kind: kind === 'Component' ? 'Component' : 'Kustomization' });
  }
  for (const entry of entries) {
    if (entry.isDirectory()) found.push(...findKustomizations(path.join(dir, entry.name)));
  }
  return found;
}

/** The machine's kubectl, if it has one that is not the project's. */
function findMachineKubectl(projectKubectl: string): string | undefined {
  let found: string | undefined = existsSync(MACHINE_KUBECTL) ? MACHINE_KUBECTL : undefined;
  if (found === undefined) {
    try {
      found = execFileSync('which', ['kubectl'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return undefined;
    }
  }
  if (found === '' || realpathSync(found) === realpathSync(projectKubectl)) return undefined;
  return found;
}

/** The ApiServerAddresses that components/network-policies needs, its example with one address filled in. */
function addressesFile(): Record<string, string> {
  const doc = parseDocument(readFileSync(ADDRESSES_EXAMPLE, 'utf8'));
  doc.set('peers', [{ ipBlock: { cidr: '10.0.0.10/32' } }]);
  return { 'api-server-addresses.yaml': doc.toString() };
}

const relative = (dir: string): string => path.relative(path.dirname(MANIFESTS), dir);
const byId = (objects: readonly KubeObject[]): KubeObject[] =>
  [...objects].sort((a, b) => objectId(a).localeCompare(objectId(b)));

const projectBinDir = resolveToolDir('kube');
const machineKubectl = findMachineKubectl(path.join(projectBinDir, 'kubectl'));
const inCi = process.env.CI === 'true';
const kustomizations = findKustomizations(MANIFESTS);
const roots = kustomizations.filter((k) => k.kind === 'Kustomization').map((k) => k.dir);
const components = kustomizations
  .filter((k) => k.kind === 'Component')
  .map((k) => k.dir)
  .sort();

interface Render {
  name: string;
  render: (binDir: string) => Promise<KubeObject[]>;
}

const renders: Render[] = [
  ...roots.map((dir) => ({ name: relative(dir), render: (binDir: string) => kustomize(binDir, dir) })),
  ...components.map((dir) => ({
    name: `${relative(MANIFESTS)} with ${relative(dir)}`,
    render: (binDir: string) => renderWithComponentDirs(binDir, [dir], MANIFESTS, addressesFile()),
  })),
  ...roots.map((root) => ({
    name: `${relative(root)} with every component`,
    render: (binDir: string) => renderWithComponentDirs(binDir, components, root, addressesFile()),
  })),
];

describe.skipIf(machineKubectl === undefined && !inCi)("every kustomization, with the machine's kubectl", () => {
  let machineBinDir = '';

  beforeAll(async () => {
    if (machineKubectl === undefined) {
      throw new Error(`no kubectl of the machine's own at ${MACHINE_KUBECTL} or on PATH (CI=true requires one)`);
    }
    machineBinDir = path.dirname(machineKubectl);
    const version = await runKubectl(machineBinDir, '/dev/null', tmpdir(), ['version', '--client']);
    expect(version.code, version.stderr).toBe(0);
    console.log(`machine kubectl ${machineKubectl}: ${version.stdout.trim().replaceAll('\n', ', ')}`);
  });

  it('finds the kustomizations by walking manifests/, the cert-manager overlay and the components among them', () => {
    const names = kustomizations.map((k) => relative(k.dir));
    expect(names).toEqual(
      expect.arrayContaining([
        'manifests',
        'manifests/base',
        'manifests/overlays/cert-manager',
        'manifests/components/deliver-env',
        'manifests/components/injection-config',
        'manifests/components/network-policies',
      ]),
    );
    expect(components.length).toBeGreaterThanOrEqual(6);
  });

  it.each(renders)('$name: the same objects', async ({ render }) => {
    const project = await render(projectBinDir);
    expect(project.length).toBeGreaterThan(0);
    const machine = await render(machineBinDir);
    expect(byId(machine).map(objectId)).toEqual(byId(project).map(objectId));
    expect(byId(machine)).toEqual(byId(project));
  });
});
