/**
 * `npm run bench:deliver-memory`: the heap deliver-env's caches take per Sandbox, for docs/install.md's memory
 * arithmetic. It holds what the two watches hold (src/deliver/controller/watches.ts): every Sandbox as the API server lists
 * it, and its pod, keyed by Sandbox and uid, plus the reconciler's one fingerprint per delivered key, and
 * measures the heap after a full collection, at 1,000 and 10,000 Sandboxes. The objects are shaped like the
 * API server's (managedFields, status, the injected runtimes and the status annotation) with the repository's
 * example pod as the template; a cluster's own templates may be larger.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { repoPath } from '../../harness/repo.js';
import { injectRuntimes, type Pod, type RuntimeConfig } from '../../src/injection/index.js';

const template = parse(readFileSync(repoPath('examples/pod.yaml'), 'utf8')) as Pod;
const configFile = repoPath('manifests/components/injection-config/injection-config.yaml');
const configMap = parse(readFileSync(configFile, 'utf8')) as { data: Record<string, string> };
const configs = new Map(Object.entries(configMap.data).map(([k, v]) => [k, JSON.parse(v) as RuntimeConfig]));

function managedFields(manager: string): unknown[] {
  return [
    {
      manager,
      operation: 'Update',
      apiVersion: 'v1',
      time: '2026-12-02T07:00:00Z',
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:metadata': { 'f:labels': { '.': {} } },
        'f:spec': { 'f:containers': { 'k:{"name":"main"}': {} } },
      },
    },
  ];
}

function sandboxJson(i: number): string {
  return JSON.stringify({
    apiVersion: 'agents.kruise.io/v1alpha1',
    kind: 'Sandbox',
    metadata: {
      name: `sbx-${i}`,
      namespace: 'team-a',
      uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      resourceVersion: String(100000 + i),
      generation: 2,
      creationTimestamp: '2026-12-02T07:00:00Z',
      labels: { 'agents.kruise.io/pool': 'pool-a' },
      annotations: { 'agents.kruise.io/claimed-by': `claim-${i}` },
      managedFields: managedFields('sandbox-controller'),
    },
    spec: { runtimes: [{ name: 'agent-runtime' }, { name: 'csi' }], template: { metadata: {}, spec: template.spec } },
    status: { phase: 'Running', podInfo: { podIP: '10.0.0.1', nodeName: 'node-1' } },
  });
}

function podJson(i: number): string {
  const admitted = injectRuntimes(template, {
    runtimes: ['agent-runtime', 'csi'].map((name) => ({ name, config: configs.get(name) as RuntimeConfig })),
    policy: 'Auto',
    allConfigs: configs,
  }).pod;
  return JSON.stringify({
    ...admitted,
    metadata: {
      ...admitted.metadata,
      name: `sbx-${i}`,
      namespace: 'team-a',
      uid: `10000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      resourceVersion: String(200000 + i),
      ownerReferences: [
        { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: `sbx-${i}`, uid: 'x', controller: true },
      ],
      managedFields: [...managedFields('sandbox-controller'), ...managedFields('kubelet')],
    },
    status: {
      phase: 'Running',
      podIP: '10.0.0.1',
      conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True' })),
      containerStatuses: [{ name: 'main', ready: true, restartCount: 0, image: 'python:3.12', imageID: 'sha256:0' }],
    },
  });
}

function heapUsed(): number {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) throw new Error('run with node --expose-gc');
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

function measure(count: number): { perSandbox: number; total: number } {
  const before = heapUsed();
  const sandboxes = new Map<string, unknown>();
  const pods = new Map<string, Map<string, unknown>>();
  const delivered = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const key = `team-a/sbx-${i}`;
    // Parsed from text, as the client parses each list and watch event: no structure shared between objects.
    sandboxes.set(key, JSON.parse(sandboxJson(i)));
    pods.set(key, new Map([[`uid-${i}`, JSON.parse(podJson(i))]]));
    delivered.set(key, `sha256:${'0'.repeat(64)}${i}`);
  }
  const total = heapUsed() - before;
  if (sandboxes.size + pods.size + delivered.size !== 3 * count) throw new Error('lost an entry');
  return { perSandbox: total / count, total };
}

const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
console.log(`Sandbox ${sandboxJson(0).length} B of JSON, its pod ${podJson(0).length} B`);
for (const count of [1000, 10000]) {
  const { perSandbox, total } = measure(count);
  console.log(`${count} Sandboxes: ${mib(total)} MiB of heap, ${Math.round(perSandbox)} B per Sandbox and its pod`);
}
