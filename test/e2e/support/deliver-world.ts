// What the deliver-env e2e suites share: Sandboxes and their pods on the real kube-apiserver, envd doubles on
// loopback addresses standing for pod IPs (test/support/envd-double.ts follows envd's published file API; it is
// not the real envd), claims as sandbox-manager writes them, and the Events deliver-env records.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEnvdDouble, type EnvdDouble, type EnvdDoubleOptions } from '../../support/envd-double.js';
import { waitUntil } from '../../support/wait-until.js';
import { wrappedSandboxPod } from '../../support/wrapped-sandbox-pod.js';
import { repoRoot, startCluster, type TestCluster } from './cluster.js';
import { serviceAccountIdentity } from './identities.js';

export const REQUEST = 'agents.kruise.io/init-runtime-request';
export const RUNTIME_URL = 'agents.kruise.io/runtime-url';

/** waitUntil as these suites ask it: until `probe` gives a value (false and null are values), 30 s unless told. */
export function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 30_000,
): Promise<T> {
  return waitUntil(probe, { what, timeoutMs, intervalMs: 50, until: (v): v is T => v !== undefined });
}

const DELIVER_COMPONENT = path.join(repoRoot, 'manifests', 'components', 'deliver-env');
/** Upstream's namespace, where the injection ConfigMap lives. */
export const CONFIG_NAMESPACE = 'sandbox-system';

/**
 * A kube-apiserver as the deliver-env suites start from: the Sandbox CRD, the test's namespace, the Lease's and
 * upstream's (where the component's RBAC reads the injection ConfigMap), the component's service account and
 * RBAC (and `moreManifests`, such as another component's RBAC), and the kubeconfig of that service account,
 * which deliver-env runs as.
 */
export async function deliverCluster(
  namespace: string,
  leaseNamespace: string,
  moreManifests: readonly string[] = [],
): Promise<{ cluster: TestCluster; kubeconfigPath: string }> {
  const cluster = await startCluster();
  await cluster.installSandboxCrd();
  await cluster.ensureNamespace(namespace);
  await cluster.ensureNamespace(leaseNamespace);
  await cluster.ensureNamespace(CONFIG_NAMESPACE);
  const manifests = [
    path.join(DELIVER_COMPONENT, 'serviceaccount.yaml'),
    path.join(DELIVER_COMPONENT, 'rbac.yaml'),
    ...moreManifests,
  ];
  await cluster.kubectlOk(['apply', ...manifests.flatMap((file) => ['-f', file])]);
  const { kubeconfigPath } = await serviceAccountIdentity(cluster, leaseNamespace, 'sandbox-injector-deliver-env');
  return { cluster, kubeconfigPath };
}

/** The double has answered the Move onto .env_ready: the file is whole, and the request is on record. */
export const readyWritten = (double: EnvdDouble): true | undefined =>
  double.requests.some((r) => r.operation === 'move' && r.path === '/var/sandbox/.env_ready' && r.status === 200)
    ? true
    : undefined;

export const writes = (double: EnvdDouble) =>
  double.requests.filter((r) => r.operation === 'upload' || r.operation === 'move');

/** Requests as `operation path`, with each attempt's random temporary name written as <tmp>. */
export const shapes = (double: EnvdDouble, from = 0): string[] =>
  double.requests
    .slice(from)
    .map((r) => `${r.operation} ${(r.path ?? '').replace(/\.[0-9a-f]{16}\.tmp\b/g, '.<tmp>')}`);

/**
 * The requests of a claim's delivery, without the one listing a Sandbox may get if deliver-env sees it before
 * its claim: an unclaimed pod's folder is looked at once for an earlier claim's files (docs/deliver-env.md). The
 * delivery itself starts with a listing, so two in a row at the start are that look and the delivery's.
 */
export const claimShapes = (double: EnvdDouble): string[] => {
  const all = shapes(double);
  return all[0] === 'list /var/sandbox' && all[1] === 'list /var/sandbox' ? all.slice(1) : all;
};

/**
 * One first delivery into a folder without a waiting wrapper: the listing (no .env_ready, so no GET; no FIFO,
 * so no wake), then both files by temporary names in one upload, and a Move of each.
 */
export const FIRST_DELIVERY = [
  'list /var/sandbox',
  'upload /var/sandbox/.env.sh.<tmp> /var/sandbox/.env_ready.<tmp>',
  'move /var/sandbox/env.sh',
  'move /var/sandbox/.env_ready',
];

/**
 * A first delivery is all in: as many requests as FIRST_DELIVERY has. A test that compares the requests waits
 * for this rather than for the Move onto .env_ready (readyWritten), so that it holds whatever comes last.
 */
export const firstDeliveryIn = (double: EnvdDouble): true | undefined =>
  claimShapes(double).length >= FIRST_DELIVERY.length ? true : undefined;

/** deliver-env's flags for a suite: short Lease times and backoffs, envd on `port` when only the IP is known. */
export const controllerArgs = (port: number, leaseNamespace: string): string[] => [
  '--runtime-port',
  String(port),
  '--lease-namespace',
  leaseNamespace,
  '--lease-duration',
  '4s',
  '--lease-renew-deadline',
  '3s',
  '--lease-retry',
  '1s',
  '--backoff-min',
  '50ms',
  '--backoff-max',
  '400ms',
  '--request-timeout',
  '2s',
];

export interface SandboxSpec {
  name: string;
  annotations?: Record<string, string>;
  /**
   * Set as `status.podInfo` of the Sandbox in place of what upstream's controller would copy from the pod it
   * made (the pod's UID and IP, which createSandbox writes otherwise).
   */
  podInfo?: { podIP?: string; podUID?: string };
  wrapped?: boolean;
  /** The pod's own status.podIP; undefined leaves the pod without one (not yet running). */
  podIP?: string | undefined;
}

export interface EventItem {
  reason?: string;
  type?: string;
  message?: string;
  involvedObject?: { name?: string };
}

export interface DeliverWorld {
  tempDir: (prefix: string) => string;
  envd: (options?: Partial<EnvdDoubleOptions>) => Promise<{ double: EnvdDouble; dir: string }>;
  createSandbox: (spec: SandboxSpec) => Promise<{ uid: string; podUid: string }>;
  /**
   * A pod of the Sandbox; with `podInfo` (the default) the Sandbox's status.podInfo then names it, as upstream's
   * controller writes it for the pod it made. `podInfo: false` leaves the Sandbox's status as it is: a pod made
   * by someone else, or not synced yet.
   */
  createPod: (
    sandbox: string,
    sandboxUid: string,
    options?: { wrapped?: boolean; suffix?: string; podIP?: string; podInfo?: boolean },
  ) => Promise<string>;
  /** Writes the Sandbox's status.podInfo, as upstream's controller does. */
  setPodInfo: (sandbox: string, podInfo: { podIP?: string; podUID?: string }) => Promise<void>;
  setPodIp: (pod: string, podIP: string) => Promise<void>;
  /** The kubelet's word that container `name` of `pod` runs as instance `id`: a restart gives another ID. */
  setRunning: (pod: string, name: string, id: string) => Promise<void>;
  claim: (sandbox: string, vars: Record<string, string>, accessToken: string) => Promise<void>;
  events: (sandbox: string) => Promise<EventItem[]>;
  /** The first Event of `reason` on the Sandbox, waited for. */
  event: (sandbox: string, reason: string) => Promise<EventItem>;
  close: () => Promise<void>;
}

/** `cluster` is read when called: the suites start theirs in beforeAll. */
export function deliverWorld(cluster: () => TestCluster, namespace: string): DeliverWorld {
  const doubles: EnvdDouble[] = [];
  const dirs: string[] = [];
  const kubectl = (args: string[]) => cluster().kubectlOk(['-n', namespace, ...args]);
  const tempDir = (prefix: string): string => {
    const dir = mkdtempSync(path.join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  const setPodIp = async (pod: string, podIP: string): Promise<void> => {
    const status = { phase: 'Running', podIP, podIPs: [{ ip: podIP }] };
    await kubectl(['patch', 'pod', pod, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
  };
  const setPodInfo: DeliverWorld['setPodInfo'] = async (sandbox, podInfo) => {
    const status = { podInfo };
    await kubectl([
      'patch',
      'sandbox',
      sandbox,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ]);
  };
  const createPod: DeliverWorld['createPod'] = async (sandbox, sandboxUid, options = {}) => {
    const name = `${sandbox}-pod${options.suffix ?? ''}`;
    const wrapped = options.wrapped ?? true;
    await cluster().applyObject(wrappedSandboxPod({ sandbox, sandboxUid, namespace, name, wrapped }));
    if (options.podIP !== undefined) await setPodIp(name, options.podIP);
    const uid = (await kubectl(['get', 'pod', name, '-o', 'jsonpath={.metadata.uid}'])).trim();
    if (options.podInfo ?? true)
      await setPodInfo(sandbox, { podUID: uid, ...(options.podIP === undefined ? {} : { podIP: options.podIP }) });
    return uid;
  };
  const events = async (sandbox: string): Promise<EventItem[]> => {
    const text = await kubectl(['get', 'events', '--field-selector', `involvedObject.name=${sandbox}`, '-o', 'json']);
    return (JSON.parse(text) as { items: EventItem[] }).items;
  };
  return {
    tempDir,
    async envd(options = {}) {
      const dir = tempDir('si-e2e-envd-');
      const double = await startEnvdDouble({ ...options, root: dir });
      doubles.push(double);
      return { double, dir };
    },
    async createSandbox(spec) {
      await cluster().applyObject({
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'Sandbox',
        metadata: { name: spec.name, namespace, annotations: spec.annotations ?? {} },
        spec: {
          runtimes: [{ name: 'agent-runtime' }],
          template: { spec: { containers: [{ name: 'main', image: 'app:1' }] } },
        },
      });
      const uid = (await kubectl(['get', 'sandbox', spec.name, '-o', 'jsonpath={.metadata.uid}'])).trim();
      const podIP = 'podIP' in spec ? spec.podIP : '127.0.0.1';
      const podUid = await createPod(spec.name, uid, {
        wrapped: spec.wrapped ?? true,
        ...(podIP === undefined ? {} : { podIP }),
        podInfo: spec.podInfo === undefined,
      });
      if (spec.podInfo !== undefined) await setPodInfo(spec.name, spec.podInfo);
      return { uid, podUid };
    },
    createPod,
    setPodIp,
    async setRunning(pod, name, id) {
      const running = { startedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
      const status = {
        containerStatuses: [
          { name, image: 'app:1', imageID: '', ready: true, restartCount: 0, containerID: id, state: { running } },
        ],
      };
      await kubectl(['patch', 'pod', pod, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status })]);
    },
    setPodInfo,
    async claim(sandbox, vars, accessToken) {
      const request = JSON.stringify({ envVars: vars, accessToken });
      await kubectl([
        'annotate',
        '--overwrite',
        'sandbox',
        sandbox,
        `${REQUEST}=${request}`,
        `agents.kruise.io/claim-timestamp=${new Date().toISOString()}`,
      ]);
    },
    events,
    event: (sandbox, reason) =>
      until(`${reason} Event on ${sandbox}`, async () => (await events(sandbox)).find((e) => e.reason === reason)),
    async close() {
      for (const double of doubles) await double.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}
