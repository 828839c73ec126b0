/**
 * The bench reviews. A shape is a container count and a body size: each container carries the same command,
 * args, three exec probes and some env vars, and the env var count is what brings the body to its size. The
 * injecting review asks for agent-runtime and csi with policy Auto, so every container command and exec probe
 * is wrapped; the no-op review is the same pod without the runtimes annotation, padded to the same size, and
 * the webhook admits it unchanged.
 */
import { podCreateReview, type PodCreateReview } from '../src/kube-shapes/pod-create-review.js';

const RUNTIMES = 'agents.kruise.io/runtimes';
const POLICY = 'agents.kruise.io/env-vars-injection-policy';
const PADDING = 'bench.example.com/padding';
const INJECT = { [RUNTIMES]: 'agent-runtime,csi', [POLICY]: 'Auto' };
// The uids of the first bench, so its 20,275-byte review stays byte for byte what the history measured.
export const INJECTING_UID = 'bench-injecting';
const NOOP_UID = 'bench-unchanged';

export interface ReviewShape {
  containers: number;
  bytes: number;
}

/** The review first (12 containers, 15 KB), then the 20 KB one the history before it was measured on. */
export const DEFAULT_SHAPES = '12:15000,4:20275';

/** "12:15000,4:20275" -> shapes; a typo must stop the run rather than bench something nobody asked for. */
export function parseShapes(spec: string): ReviewShape[] {
  return spec.split(',').map((item) => {
    const match = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(item);
    const containers = Number(match?.[1]);
    const bytes = Number(match?.[2]);
    if (match === null || containers < 1 || bytes < 1) {
      throw new Error(`BENCH_REVIEWS: "${item}" is not CONTAINERS:BYTES (e.g. ${DEFAULT_SHAPES})`);
    }
    return { containers, bytes };
  });
}

export function shapeName(shape: ReviewShape): string {
  return `${shape.containers} containers, ${(shape.bytes / 1000).toFixed(1)} kB`;
}

function env(container: number, count: number): { name: string; value: string }[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `APP_SETTING_${container}_${String(i).padStart(2, '0')}`,
    value: `value-${container}-${i}-${'v'.repeat(24)}`,
  }));
}

function container(index: number, envVars: number): Record<string, unknown> {
  const name = index === 0 ? 'agent' : `worker-${index}`;
  const port = 8080 + index;
  const probe = (what: string): Record<string, unknown> => ({
    exec: { command: ['/bin/sh', '-c', `test -f /tmp/${name}-${what} && curl -fsS localhost:${port}/${what}`] },
    periodSeconds: 10,
    timeoutSeconds: 2,
    failureThreshold: 3,
  });
  return {
    name,
    image: `registry.example.com/agents/${name}:v1.${index}.0`,
    command: ['/usr/local/bin/python', '-m', `agents.${name.replace('-', '_')}`],
    args: ['--listen', `0.0.0.0:${port}`, '--log-format', 'json', '--workdir', '/workspace'],
    env: env(index, envVars),
    ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }],
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

export function benchPod(
  containers: number,
  envVars: number,
  annotations: Record<string, string>,
): Record<string, unknown> {
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
      containers: Array.from({ length: containers }, (_, i) => container(i, envVars)),
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

/** The review a live kube-apiserver sends for the pod's creation, by a Sandbox controller's service account. */
function reviewOf(pod: Record<string, unknown>, uid: string): PodCreateReview {
  const userInfo = {
    username: 'system:serviceaccount:kruise-system:kruise-agents',
    groups: ['system:serviceaccounts'],
  };
  return podCreateReview(pod, { uid, namespace: 'agents', userInfo });
}

/** A review of `containers` containers asking for the runtimes (`inject`) or not, as JSON text. */
export function reviewText(
  containers: number,
  envVars: number,
  inject: boolean,
  uid: string,
  padding?: number,
): string {
  const annotations: Record<string, string> = inject ? { ...INJECT } : {};
  if (padding !== undefined) annotations[PADDING] = 'p'.repeat(padding);
  return JSON.stringify(reviewOf(benchPod(containers, envVars, annotations), uid));
}

export interface ShapeReviews {
  shape: ReviewShape;
  envVarsPerContainer: number;
  injecting: string;
  noop: string;
}

/**
 * The largest env var count whose review fits the size, then an inert annotation for the last bytes, so both
 * bodies are exactly `shape.bytes` on the wire. Without padding when the env vars alone land on the size: the
 * 20,275-byte review keeps the bytes its earlier figures were measured on.
 */
export function shapeReviews(shape: ReviewShape): ShapeReviews {
  const size = (envVars: number, padding?: number): number =>
    reviewText(shape.containers, envVars, true, INJECTING_UID, padding).length;
  let envVars = 0;
  while (size(envVars + 1) <= shape.bytes) envVars += 1;
  let injecting: string;
  if (size(envVars) === shape.bytes) {
    injecting = reviewText(shape.containers, envVars, true, INJECTING_UID);
  } else {
    while (envVars > 0 && size(envVars, 0) > shape.bytes) envVars -= 1;
    const padding = shape.bytes - size(envVars, 0);
    if (padding < 0) throw new Error(`${shapeName(shape)}: ${size(0, 0)} bytes without env vars is already too large`);
    injecting = reviewText(shape.containers, envVars, true, INJECTING_UID, padding);
  }
  const noopPadding = shape.bytes - reviewText(shape.containers, envVars, false, NOOP_UID, 0).length;
  const noop = reviewText(shape.containers, envVars, false, NOOP_UID, noopPadding);
  if (injecting.length !== shape.bytes || noop.length !== shape.bytes) {
    throw new Error(`${shapeName(shape)}: bodies of ${injecting.length} and ${noop.length} bytes, not ${shape.bytes}`);
  }
  return { shape, envVarsPerContainer: envVars, injecting, noop };
}

/** The annotation limit kube-apiserver enforces (apimachinery's TotalAnnotationSizeLimitB), in bytes. */
const ANNOTATION_LIMIT = 256 * 1024;

/**
 * A legal pod with a huge annotation map (issue 10, item 5): `keys` short annotations beside the runtimes
 * annotations, under kube-apiserver's 256 KiB in all, on a one-container pod that gets both runtimes injected.
 * A review of it must not hold the event loop much longer than its parse.
 */
export function manyAnnotationsReview(keys: number): string {
  const annotations: Record<string, string> = { ...INJECT };
  for (let i = 0; i < keys; i++) annotations[`a${i}`] = 'v';
  const bytes = Object.entries(annotations).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  if (bytes >= ANNOTATION_LIMIT)
    throw new Error(`${keys} annotations take ${bytes} B, past the ${ANNOTATION_LIMIT} B a pod may have`);
  return JSON.stringify(reviewOf(benchPod(1, 0, annotations), 'bench-many-annotations'));
}
