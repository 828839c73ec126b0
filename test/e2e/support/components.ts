// manifests/components/ enabled the way docs/install.md tells users to: a kustomization of their own with
// manifests/ (or an overlay) as its resource and the components listed under `components:`, rendered by the
// real kubectl's kustomize.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify as toYaml } from 'yaml';
import { repoRoot } from './binaries.js';
import { at } from './json.js';
import { runKubectl } from './kubectl.js';

export const MANIFESTS = path.join(repoRoot, 'manifests');
export const COMPONENTS = [
  'autoscaling',
  'monitoring',
  'deliver-env',
  'deliver-env-monitoring',
  'network-policies',
  'pod-ownership-policy',
  'deliver-env-pool-replacement',
  'grafana-dashboard',
] as const;
export type ComponentName = (typeof COMPONENTS)[number];

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export function parseObjects(yamlText: string): KubeObject[] {
  return parseAllDocuments(yamlText).map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`document ${i}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (typeof at(value, 'kind') !== 'string' || typeof at(value, 'metadata', 'name') !== 'string') {
      throw new Error(`document ${i} is not a Kubernetes object: ${JSON.stringify(value).slice(0, 200)}`);
    }
    return value as KubeObject;
  });
}

export function findObject(objects: readonly KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`${kind}/${name} not rendered`);
  return found;
}

export const objectId = (o: KubeObject): string =>
  `${o.kind}/${o.metadata.namespace === undefined ? '' : `${o.metadata.namespace}/`}${o.metadata.name}`;

export const asYaml = (objects: readonly KubeObject[]): string => objects.map((o) => toYaml(o)).join('---\n');

/** `kubectl kustomize` of `dir` (no cluster needed); rejects with kubectl's stderr on a failure. */
export async function kustomize(kubeBinDir: string, dir: string): Promise<KubeObject[]> {
  const home = mkdtempSync(path.join(tmpdir(), 'si-e2e-kustomize-home-'));
  try {
    const result = await runKubectl(kubeBinDir, path.join(home, 'no-kubeconfig'), home, ['kustomize', dir]);
    if (result.code !== 0) throw new Error(`kubectl kustomize ${dir} exited ${result.code}: ${result.stderr.trim()}`);
    return parseObjects(result.stdout);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * Renders `resource` (manifests/ by default) with the given components, as a user's kustomization would;
 * `ownFiles` (file name to text) are written beside the kustomization and listed in its resources too.
 */
export function renderWithComponents(
  kubeBinDir: string,
  components: readonly ComponentName[],
  resource = MANIFESTS,
  ownFiles: Readonly<Record<string, string>> = {},
): Promise<KubeObject[]> {
  const dirs = components.map((name) => path.join(MANIFESTS, 'components', name));
  return renderWithComponentDirs(kubeBinDir, dirs, resource, ownFiles);
}

/** renderWithComponents() for components named by their folders, any folder. */
export async function renderWithComponentDirs(
  kubeBinDir: string,
  componentDirs: readonly string[],
  resource = MANIFESTS,
  ownFiles: Readonly<Record<string, string>> = {},
): Promise<KubeObject[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'si-e2e-components-'));
  try {
    for (const [name, text] of Object.entries(ownFiles)) writeFileSync(path.join(dir, name), text);
    // Relative paths, as in a kustomization checked in next to manifests/.
    const kustomization = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [path.relative(dir, resource), ...Object.keys(ownFiles)],
      components: componentDirs.map((component) => path.relative(dir, component)),
    };
    writeFileSync(path.join(dir, 'kustomization.yaml'), toYaml(kustomization));
    return await kustomize(kubeBinDir, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
