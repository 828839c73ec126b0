// A real, throw-away Kubernetes control plane for the e2e suite: etcd and
// kube-apiserver built from their Go modules by test/e2e/cluster/build.sh,
// started on random loopback ports with a fresh PKI in a temp dir.
//
// There is no kubelet, scheduler or controller-manager: objects are stored and
// go through authentication, RBAC and the admission chain, but pods never run
// and no controller acts on anything. In particular no controller creates the
// `default` ServiceAccount of a namespace, and the ServiceAccount admission
// plugin refuses a pod whose ServiceAccount does not exist, so a test must
// create that ServiceAccount (see ensureNamespace) before it creates pods.
//
// This module puts the steps together; each step lives in a module of its own
// (binaries, cluster-pki, etcd, kube-apiserver, kubeconfig, kubectl, teardown).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { CertAndKey } from '../../server/support/pki.js';
import { repoRoot, resolveBinDir } from './binaries.js';
import { writeClusterPki, type ClusterPki } from './cluster-pki.js';
import { startEtcd, waitForEtcd } from './etcd.js';
import { freePorts } from './free-ports.js';
import { apiserverFlags, startApiserver, waitForApiserver } from './kube-apiserver.js';
import { clientCertUser, writeKubeconfig } from './kubeconfig.js';
import { runKubectl, type KubectlOptions, type KubectlResult } from './kubectl.js';
import { StartError } from './readiness.js';
import { guardCluster, type ClusterTeardown } from './teardown.js';

// What the e2e tests have always imported from here.
export { BIN_DIR_ENV, buildScript, repoRoot, resolveBinDir } from './binaries.js';

/** The Sandbox CRD the suites install: today's OpenKruise Agents CRD plus the proposed policy field. */
export const SANDBOX_CRD = path.join(repoRoot, 'test', 'fixtures', 'e2e', 'sandbox-crd.yaml');
export type { KubectlOptions, KubectlResult } from './kubectl.js';
export {
  createCa,
  createClientCert,
  createServingCert,
  rsaKeyPair,
  type CertAndKey,
  type KeyPairPem,
  type ServingCertOptions,
} from '../../server/support/pki.js';

export interface StartClusterOptions {
  /** Folder with etcd, kube-apiserver, kubectl; default resolveBinDir(). */
  binDir?: string;
  /** Give up starting after this long; default 180 s. */
  startTimeoutMs?: number;
  /** Extra kube-apiserver flags, appended last (a repeated flag wins). */
  apiserverArgs?: string[];
  /** kube-apiserver log verbosity (-v); default 1. */
  verbosity?: number;
  /** Leave the temp dir (logs, certs) behind when startup fails; default false. */
  keepDirOnFailure?: boolean;
}

export interface TestCluster {
  /** https://127.0.0.1:<port> */
  server: string;
  kubeconfigPath: string;
  /** The cluster CA; it signed the apiserver's serving cert and the admin client cert. */
  caPem: string;
  ca: CertAndKey;
  /** Client cert/key of user e2e-admin in group system:masters. */
  admin: CertAndKey;
  binDir: string;
  /** Temp dir holding certs, kubeconfig, etcd data and process logs. */
  dir: string;
  etcdUrl: string;
  /** Milliseconds from spawning etcd until the apiserver was ready. */
  startupMs: number;
  /** Runs kubectl against this cluster; never rejects on a non-zero exit code. */
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /** Like kubectl(), but rejects (with stderr) unless the exit code is 0; resolves to stdout. */
  kubectlOk(args: string[], opts?: KubectlOptions): Promise<string>;
  /** Creates the namespace (if missing) and its `default` ServiceAccount, which pods need here. */
  ensureNamespace(name: string): Promise<void>;
  /** `kubectl apply` of one object given as JSON-able data. */
  applyObject(object: unknown): Promise<void>;
  /** Applies a Sandbox CRD (ours by default) and waits until it is Established. */
  installSandboxCrd(crdFile?: string): Promise<void>;
  stop(): Promise<void>;
}

interface Endpoints {
  etcdUrl: string;
  etcdPeerUrl: string;
  apiserverPort: number;
  server: string;
}

/** Loopback URLs for etcd (client, peer) and kube-apiserver, on ports free a moment ago. */
async function pickEndpoints(): Promise<Endpoints> {
  const [clientPort, peerPort, apiPort] = await freePorts(3);
  if (clientPort === undefined || peerPort === undefined || apiPort === undefined) {
    throw new Error('could not reserve loopback ports');
  }
  return {
    etcdUrl: `http://127.0.0.1:${clientPort}`,
    etcdPeerUrl: `http://127.0.0.1:${peerPort}`,
    apiserverPort: apiPort,
    server: `https://127.0.0.1:${apiPort}`,
  };
}

interface Started {
  binDir: string;
  dir: string;
  endpoints: Endpoints;
  pki: ClusterPki;
  kubeconfigPath: string;
  startupMs: number;
  teardown: ClusterTeardown;
}

/** The TestCluster handed to tests, over a control plane that is up. */
function clusterHandle(s: Started): TestCluster {
  let stopped: Promise<void> | undefined;
  const kubectl = (args: string[], kopts?: KubectlOptions): Promise<KubectlResult> =>
    runKubectl(s.binDir, s.kubeconfigPath, s.dir, args, kopts);
  const kubectlOk = async (args: string[], kopts?: KubectlOptions): Promise<string> => {
    const r = await kubectl(args, kopts);
    if (r.code !== 0) {
      throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
    }
    return r.stdout;
  };
  return {
    server: s.endpoints.server,
    kubeconfigPath: s.kubeconfigPath,
    caPem: s.pki.ca.certPem,
    ca: s.pki.ca,
    admin: s.pki.admin,
    binDir: s.binDir,
    dir: s.dir,
    etcdUrl: s.endpoints.etcdUrl,
    startupMs: s.startupMs,
    kubectl,
    kubectlOk,
    async ensureNamespace(name: string): Promise<void> {
      const manifest =
        toYaml({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }) +
        '---\n' +
        toYaml({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: name } });
      await kubectlOk(['apply', '-f', '-'], { input: manifest });
    },
    async applyObject(object: unknown): Promise<void> {
      await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify(object) });
    },
    async installSandboxCrd(crdFile = SANDBOX_CRD): Promise<void> {
      await kubectlOk(['apply', '-f', crdFile]);
      await kubectlOk(['wait', '--for=condition=Established', 'crd/sandboxes.agents.kruise.io', '--timeout=60s']);
    },
    stop(): Promise<void> {
      stopped ??= (async () => {
        await s.teardown.stopAll(10_000);
        rmSync(s.dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

async function startOnce(opts: StartClusterOptions, binDir: string): Promise<TestCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-injector-e2e-'));
  const teardown = guardCluster(dir);
  try {
    const pki = writeClusterPki(dir);
    const endpoints = await pickEndpoints();
    const started = Date.now();
    const deadline = started + (opts.startTimeoutMs ?? 180_000);

    const etcd = startEtcd(binDir, dir, { clientUrl: endpoints.etcdUrl, peerUrl: endpoints.etcdPeerUrl });
    teardown.track(etcd);
    await waitForEtcd(etcd, endpoints.etcdUrl, deadline);

    const flags = apiserverFlags({
      dir,
      etcdUrl: endpoints.etcdUrl,
      port: endpoints.apiserverPort,
      pki,
      verbosity: opts.verbosity,
      extra: opts.apiserverArgs,
    });
    teardown.track(startApiserver(binDir, dir, flags));
    await waitForApiserver(endpoints.server, pki, deadline, teardown.procs);
    const startupMs = Date.now() - started;

    const kubeconfigPath = path.join(dir, 'kubeconfig');
    writeKubeconfig(kubeconfigPath, endpoints.server, pki.ca.certPem, 'e2e-admin', clientCertUser(pki.admin));

    return clusterHandle({ binDir, dir, endpoints, pki, kubeconfigPath, startupMs, teardown });
  } catch (err) {
    await teardown.stopAll(5_000);
    if (opts.keepDirOnFailure) {
      process.stderr.write(`e2e cluster: start failed, leaving ${dir}\n`);
    } else {
      rmSync(dir, { recursive: true, force: true });
    }
    throw err;
  }
}

/**
 * Starts etcd + kube-apiserver on random 127.0.0.1 ports and waits until the
 * apiserver is ready. Call stop() when done; if the test process exits first,
 * the processes are killed and the temp dir removed anyway.
 */
export async function startCluster(opts: StartClusterOptions = {}): Promise<TestCluster> {
  const binDir = opts.binDir ?? resolveBinDir();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts, binDir);
    } catch (err) {
      // A port picked as free can be taken by someone else before our
      // process binds it; try again with new ports.
      if (err instanceof StartError && err.portInUse && attempt < 3) continue;
      throw err;
    }
  }
}
