// The real helm (built by test/e2e/cluster/build.sh helm) run against the chart in charts/sandbox-injector,
// with its cache, config and data folders in a temp dir of its own so no user's repositories or plugins count.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot, toolPath } from './binaries.js';
import { at } from './json.js';
import type { KubectlResult } from './kubectl.js';
import { runCollecting } from './processes.js';

export const CHART = path.join(repoRoot, 'charts', 'sandbox-injector');
/** The release and namespace whose names are those of manifests/ (the chart derives every name from them). */
export const RELEASE = 'sandbox-injector';
export const NAMESPACE = 'sandbox-injector-system';
/**
 * The Kubernetes version `helm template` renders for: the e2e kube-apiserver's, said explicitly (build.sh stamps
 * helm with its client-go's minor, as a release build does, which need not be the server's); `helm install`
 * asks the server instead.
 */
export const KUBE_VERSION = 'v1.36.3';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface Helm {
  /** Runs helm to completion; never rejects on a non-zero exit. */
  run(args: string[]): Promise<KubectlResult>;
  /** Like run(), but rejects with stderr unless helm exits 0; resolves to stdout. */
  runOk(args: string[]): Promise<string>;
  /** Starts helm and returns at once, e.g. an install --wait that the test must help along. */
  start(args: string[]): { process: ChildProcess; done: Promise<KubectlResult> };
  /** Writes values (JSON is YAML) to a file of this helm's temp dir and returns `-f <file>`. */
  valuesArgs(values: Record<string, unknown>): string[];
  /** `helm template` of the chart with these values (as RELEASE in NAMESPACE unless said otherwise), parsed. */
  template(values?: Record<string, unknown>, where?: ReleaseWhere): Promise<KubeObject[]>;
  /** The same render as template(), as helm prints it. */
  templateText(values?: Record<string, unknown>, where?: ReleaseWhere, extraArgs?: string[]): Promise<string>;
  /** The same `helm template`, whatever its exit: for renders the chart must refuse. */
  templateRun(values?: Record<string, unknown>, where?: ReleaseWhere, extraArgs?: string[]): Promise<KubectlResult>;
  dispose(): void;
}

export interface ReleaseWhere {
  release?: string;
  namespace?: string;
}

/** A helm whose every command uses `kubeconfigPath` (when given) and a fresh HELM_*_HOME. */
export function makeHelm(kubeconfigPath?: string): Helm {
  const home = mkdtempSync(path.join(tmpdir(), 'si-e2e-helm-'));
  const env = {
    ...process.env,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
    ...(kubeconfigPath === undefined ? {} : { KUBECONFIG: kubeconfigPath }),
  };
  let files = 0;

  const start = (args: string[]): { process: ChildProcess; done: Promise<KubectlResult> } =>
    runCollecting(toolPath('helm', 'helm'), args, { cwd: home, env });
  const run = (args: string[]): Promise<KubectlResult> => start(args).done;
  const runOk = async (args: string[]): Promise<string> => {
    const result = await run(args);
    if (result.code !== 0) throw new Error(`helm ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return result.stdout;
  };
  const valuesArgs = (values: Record<string, unknown>): string[] => {
    const file = path.join(home, `values-${++files}.yaml`);
    writeFileSync(file, JSON.stringify(values));
    return ['-f', file];
  };
  const templateArgs = (values: Record<string, unknown>, where: ReleaseWhere, extraArgs: string[]): string[] => [
    'template',
    where.release ?? RELEASE,
    CHART,
    '--namespace',
    where.namespace ?? NAMESPACE,
    '--kube-version',
    KUBE_VERSION,
    ...valuesArgs(values),
    ...extraArgs,
  ];
  const templateText = (
    values: Record<string, unknown> = {},
    where: ReleaseWhere = {},
    extraArgs: string[] = [],
  ): Promise<string> => runOk(templateArgs(values, where, extraArgs));
  return {
    run,
    runOk,
    start,
    valuesArgs,
    templateText,
    templateRun: (values = {}, where = {}, extraArgs = []) => run(templateArgs(values, where, extraArgs)),
    template: async (values = {}, where = {}) => parseObjects(await templateText(values, where)),
    dispose: () => rmSync(home, { recursive: true, force: true }),
  };
}

/** The objects of a multi-document YAML stream (empty documents, which helm leaves between templates, dropped). */
export function parseObjects(yamlText: string): KubeObject[] {
  return parseAllDocuments(yamlText).flatMap((doc, i): KubeObject[] => {
    if (doc.errors.length > 0) throw new Error(`document ${i}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return [];
    if (typeof at(value, 'kind') !== 'string' || typeof at(value, 'metadata', 'name') !== 'string') {
      throw new Error(`document ${i} is not a Kubernetes object: ${JSON.stringify(value).slice(0, 200)}`);
    }
    const object = value as KubeObject;
    return [object];
  });
}
