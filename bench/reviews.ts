/**
 * The two bench reviews, about 20 KB each: (a) a sandbox pod asking for agent-runtime and csi with policy
 * Auto, so every container command and exec probe is wrapped; (b) the same pod without the runtimes
 * annotation, padded to the same size, which the webhook admits unchanged.
 */

const RUNTIMES = 'agents.kruise.io/runtimes';
const POLICY = 'agents.kruise.io/env-vars-injection-policy';

function env(container: number, count: number): { name: string; value: string }[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `APP_SETTING_${container}_${String(i).padStart(2, '0')}`,
    value: `value-${container}-${i}-${'v'.repeat(24)}`,
  }));
}

function container(index: number): Record<string, unknown> {
  const name = index === 0 ? 'agent' : `worker-${index}`;
  const probe = (what: string): Record<string, unknown> => ({
    exec: { command: ['/bin/sh', '-c', `test -f /tmp/${name}-${what} && curl -fsS localhost:808${index}/${what}`] },
    periodSeconds: 10,
    timeoutSeconds: 2,
    failureThreshold: 3,
  });
  return {
    name,
    image: `registry.example.com/agents/${name}:v1.${index}.0`,
    command: ['/usr/local/bin/python', '-m', `agents.${name.replace('-', '_')}`],
    args: ['--listen', `0.0.0.0:808${index}`, '--log-format', 'json', '--workdir', '/workspace'],
    env: env(index, 50),
    ports: [{ name: 'http', containerPort: 8080 + index, protocol: 'TCP' }],
    resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { cpu: '2', memory: '4Gi' } },
    volumeMounts: [
      { name: 'workspace', mountPath: '/workspace' },
      { name: 'cache', mountPath: `/cache/${name}` },
    ],
    livenessProbe: probe('live'),
    readinessProbe: probe('ready'),
    startupProbe: probe('started'),
    securityContext: { runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false },
  };
}

export function benchPod(annotations: Record<string, string>): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: 'sbx-bench-',
      namespace: 'agents',
      labels: { 'agents.kruise.io/sandbox-name': 'sbx-bench', app: 'agent', tier: 'sandbox' },
      annotations,
    },
    spec: {
      containers: [0, 1, 2, 3].map(container),
      initContainers: [{ name: 'fetch-workspace', image: 'registry.example.com/git:2', command: ['git', 'clone'] }],
      volumes: [
        { name: 'workspace', emptyDir: {} },
        { name: 'cache', emptyDir: { sizeLimit: '2Gi' } },
      ],
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 30,
    },
  };
}

export function reviewOf(pod: Record<string, unknown>, uid: string): Record<string, unknown> {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      operation: 'CREATE',
      namespace: 'agents',
      userInfo: { username: 'system:serviceaccount:kruise-system:kruise-agents', groups: ['system:serviceaccounts'] },
      object: pod,
      dryRun: false,
      options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
    },
  };
}

export interface BenchReviews {
  injecting: string;
  unchanged: string;
}

export function benchReviews(): BenchReviews {
  const injecting = JSON.stringify(
    reviewOf(benchPod({ [RUNTIMES]: 'agent-runtime,csi', [POLICY]: 'Auto' }), 'bench-injecting'),
  );
  const bare = JSON.stringify(reviewOf(benchPod({}), 'bench-unchanged'));
  // Pad (b) with an inert annotation so both bodies are the same size on the wire.
  const padding = Math.max(0, injecting.length - bare.length - '{"bench.example.com/padding":""}'.length + 2);
  const unchanged = JSON.stringify(
    reviewOf(benchPod({ 'bench.example.com/padding': 'p'.repeat(padding) }), 'bench-unchanged'),
  );
  return { injecting, unchanged };
}
