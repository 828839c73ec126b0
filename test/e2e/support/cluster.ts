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
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import forge from 'node-forge';
import { stringify as toYaml } from 'yaml';

// ---------------------------------------------------------------------------
// Binaries
// ---------------------------------------------------------------------------

/** Set by `npm run test:e2e` to the bin dir that build.sh printed. */
export const BIN_DIR_ENV = 'SANDBOX_INJECTOR_KUBE_BIN_DIR';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const buildScript = path.join(repoRoot, 'test', 'e2e', 'cluster', 'build.sh');
const BINARIES = ['etcd', 'kube-apiserver', 'kubectl'] as const;

let resolvedBinDir: string | undefined;

/**
 * The folder holding etcd, kube-apiserver and kubectl: $SANDBOX_INJECTOR_KUBE_BIN_DIR
 * when set, otherwise whatever build.sh prints (it only builds when its cache
 * folder is missing, so this is quick after the first time).
 */
export function resolveBinDir(): string {
  if (resolvedBinDir !== undefined) return resolvedBinDir;
  let dir = process.env[BIN_DIR_ENV];
  if (dir === undefined || dir === '') {
    const out = execFileSync('bash', [buildScript], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 1024 * 1024,
    });
    dir = out.trim().split('\n').pop() ?? '';
  }
  for (const bin of BINARIES) {
    if (!existsSync(path.join(dir, bin))) {
      throw new Error(`e2e cluster binary ${bin} not found in '${dir}' (run bash ${buildScript})`);
    }
  }
  resolvedBinDir = dir;
  return dir;
}

// ---------------------------------------------------------------------------
// PKI
// ---------------------------------------------------------------------------

export interface KeyPairPem {
  privateKeyPem: string;
  publicKeyPem: string;
}

export interface CertAndKey {
  certPem: string;
  keyPem: string;
}

/** RSA key pair from node:crypto (native, fast); private key as PKCS#8 PEM. */
export function rsaKeyPair(bits = 2048): KeyPairPem {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}

type Subject = forge.pki.CertificateField[];

function signCert(
  subject: Subject,
  publicKeyPem: string,
  extensions: object[],
  issuer: { subject: Subject; keyPem: string },
  validDays: number,
): string {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  // Leading 0x01 keeps the serial positive (Go's x509 rejects negative ones).
  cert.serialNumber = '01' + randomBytes(15).toString('hex');
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 60 * 60 * 1000);
  cert.validity.notAfter = new Date(now + validDays * 24 * 60 * 60 * 1000);
  cert.setSubject(subject);
  cert.setIssuer(issuer.subject);
  cert.setExtensions(extensions);
  cert.sign(forge.pki.privateKeyFromPem(issuer.keyPem), forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

function subjectOf(certPem: string): Subject {
  return forge.pki.certificateFromPem(certPem).subject.attributes;
}

export function createCa(commonName: string, validDays = 7): CertAndKey {
  const keys = rsaKeyPair();
  const subject: Subject = [{ name: 'commonName', value: commonName }];
  const certPem = signCert(
    subject,
    keys.publicKeyPem,
    [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      { name: 'subjectKeyIdentifier' },
    ],
    { subject, keyPem: keys.privateKeyPem },
    validDays,
  );
  return { certPem, keyPem: keys.privateKeyPem };
}

export interface ServingCertOptions {
  commonName: string;
  dnsNames: string[];
  ipAddresses: string[];
  validDays?: number;
}

/** A TLS server certificate signed by `ca` (e.g. for a webhook under test). */
export function createServingCert(ca: CertAndKey, opts: ServingCertOptions): CertAndKey {
  const keys = rsaKeyPair();
  const altNames = [
    ...opts.dnsNames.map((value) => ({ type: 2, value })),
    ...opts.ipAddresses.map((ip) => ({ type: 7, ip })),
  ];
  const certPem = signCert(
    [{ name: 'commonName', value: opts.commonName }],
    keys.publicKeyPem,
    [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
    { subject: subjectOf(ca.certPem), keyPem: ca.keyPem },
    opts.validDays ?? 7,
  );
  return { certPem, keyPem: keys.privateKeyPem };
}

/** A client certificate: Kubernetes reads CN as the user and each O as a group. */
export function createClientCert(ca: CertAndKey, user: string, groups: string[], validDays = 7): CertAndKey {
  const keys = rsaKeyPair();
  const certPem = signCert(
    [
      { name: 'commonName', value: user },
      ...groups.map((value) => ({ name: 'organizationName', value })),
    ],
    keys.publicKeyPem,
    [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', clientAuth: true },
    ],
    { subject: subjectOf(ca.certPem), keyPem: ca.keyPem },
    validDays,
  );
  return { certPem, keyPem: keys.privateKeyPem };
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

interface ManagedProcess {
  name: string;
  child: ChildProcess;
  logPath: string;
  exit: ExitInfo | undefined;
  exited: Promise<ExitInfo>;
}

function startProcess(name: string, bin: string, args: string[], cwd: string): ManagedProcess {
  const logPath = path.join(cwd, `${name}.log`);
  const fd = openSync(logPath, 'a');
  let child: ChildProcess;
  try {
    child = spawn(bin, args, { cwd, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  const proc: ManagedProcess = {
    name,
    child,
    logPath,
    exit: undefined,
    exited: new Promise<ExitInfo>((resolve) => {
      child.once('error', (error) => {
        proc.exit = { code: null, signal: null, error };
        resolve(proc.exit);
      });
      child.once('exit', (code, signal) => {
        proc.exit = { code, signal };
        resolve(proc.exit);
      });
    }),
  };
  return proc;
}

function logTail(p: ManagedProcess, lines = 40): string {
  try {
    return readFileSync(p.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function describeExit(e: ExitInfo): string {
  if (e.error) return `failed to start: ${e.error.message}`;
  return e.signal ? `killed by ${e.signal}` : `exited with code ${String(e.code)}`;
}

async function stopProcess(p: ManagedProcess, graceMs: number): Promise<void> {
  if (p.exit !== undefined || p.child.pid === undefined) return;
  p.child.kill('SIGTERM');
  const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
  if ((await Promise.race([p.exited, timer])) === 'timeout') {
    p.child.kill('SIGKILL');
    await p.exited;
  }
}

/** Ports that were free a moment ago (all held open together, so distinct). */
async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const srv = createServer();
      servers.push(srv);
      ports.push(
        await new Promise<number>((resolve, reject) => {
          srv.once('error', reject);
          srv.listen(0, '127.0.0.1', () => {
            const addr = srv.address();
            if (addr === null || typeof addr === 'string') reject(new Error('no port assigned'));
            else resolve(addr.port);
          });
        }),
      );
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

interface HttpResult {
  status: number;
  body: string;
}

interface TlsMaterial {
  ca: string;
  cert: string;
  key: string;
}

function httpGet(url: string, tls?: TlsMaterial, timeoutMs = 5000): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const onResponse = (res: IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    };
    const req =
      u.protocol === 'https:'
        ? httpsRequest(u, { method: 'GET', timeout: timeoutMs, ...(tls ?? {}) }, onResponse)
        : httpRequest(u, { method: 'GET', timeout: timeoutMs }, onResponse);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

class StartError extends Error {
  constructor(
    message: string,
    readonly portInUse: boolean,
  ) {
    super(message);
  }
}

async function waitUntil(
  what: string,
  deadline: number,
  procs: ManagedProcess[],
  check: () => Promise<string | true>,
): Promise<void> {
  let last = 'not checked yet';
  for (;;) {
    for (const p of procs) {
      if (p.exit !== undefined) {
        const tail = logTail(p);
        throw new StartError(
          `${p.name} ${describeExit(p.exit)} while waiting for ${what}; log ${p.logPath}:\n${tail}`,
          /address already in use/i.test(tail),
        );
      }
    }
    try {
      const r = await check();
      if (r === true) return;
      last = r;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      const tails = procs.map((p) => `--- ${p.name} (${p.logPath}):\n${logTail(p, 20)}`).join('\n');
      throw new StartError(`timed out waiting for ${what} (last: ${last})\n${tails}`, false);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

// Clusters still running, so an exiting test process can take them down. A
// detached watchdog per cluster covers the case where the process is killed
// outright and no exit handler runs.
const liveClusters = new Set<{ killNow(): void }>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const c of liveClusters) c.killNow();
  });
}

const WATCHDOG = `
parent=$1; dir=$2
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
if [ -f "$dir/pids" ]; then
  for p in $(cat "$dir/pids"); do
    if grep -qaF -- "$dir" "/proc/$p/cmdline" 2>/dev/null; then kill -9 "$p" 2>/dev/null; fi
  done
fi
rm -rf -- "$dir"
`;

// ---------------------------------------------------------------------------
// Cluster
// ---------------------------------------------------------------------------

export interface KubectlOptions {
  /** Written to kubectl's stdin (e.g. a manifest for `apply -f -`). */
  input?: string;
  /** Kill kubectl after this long and reject; default 60 s. */
  timeoutMs?: number;
  cwd?: string;
  env?: Record<string, string>;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

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
  stop(): Promise<void>;
}

function runKubectl(
  binDir: string,
  kubeconfigPath: string,
  home: string,
  args: string[],
  opts: KubectlOptions = {},
): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(binDir, 'kubectl'), args, {
      cwd: opts.cwd ?? home,
      // HOME keeps kubectl's discovery cache inside the cluster dir.
      env: { ...process.env, KUBECONFIG: kubeconfigPath, HOME: home, ...(opts.env ?? {}) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kubectl ${args.join(' ')} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code: code ?? (signal ? 128 : 1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

async function startOnce(opts: StartClusterOptions, binDir: string): Promise<TestCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-injector-e2e-'));
  const watchdog = spawn('sh', ['-c', WATCHDOG, 'sandbox-injector-e2e-watchdog', String(process.pid), dir], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
  const procs: ManagedProcess[] = [];
  const killNow = (): void => {
    for (const p of procs) if (p.exit === undefined) p.child.kill('SIGKILL');
    if (watchdog.exitCode === null) watchdog.kill('SIGKILL');
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // A process killed a moment ago may still be writing; the watchdog is gone
      // too, so this is best effort.
    }
  };
  const handle = { killNow };
  liveClusters.add(handle);
  installExitHook();

  try {
    // PKI -------------------------------------------------------------------
    const pki = path.join(dir, 'pki');
    mkdirSync(pki);
    const ca = createCa('sandbox-injector-e2e-ca');
    const serving = createServingCert(ca, {
      commonName: 'kube-apiserver',
      dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
      ipAddresses: ['127.0.0.1'],
    });
    const admin = createClientCert(ca, 'e2e-admin', ['system:masters']);
    const sa = rsaKeyPair();
    const file = (name: string, content: string): string => {
      const p = path.join(pki, name);
      writeFileSync(p, content, { mode: 0o600 });
      return p;
    };
    const caFile = file('ca.crt', ca.certPem);
    const servingCert = file('apiserver.crt', serving.certPem);
    const servingKey = file('apiserver.key', serving.keyPem);
    const saPub = file('sa.pub', sa.publicKeyPem);
    const saKey = file('sa.key', sa.privateKeyPem);

    const [clientPort, peerPort, apiPort] = await freePorts(3);
    if (clientPort === undefined || peerPort === undefined || apiPort === undefined) {
      throw new Error('could not reserve loopback ports');
    }
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const server = `https://127.0.0.1:${apiPort}`;
    const started = Date.now();
    const deadline = started + (opts.startTimeoutMs ?? 180_000);

    // etcd ------------------------------------------------------------------
    const etcd = startProcess(
      'etcd',
      path.join(binDir, 'etcd'),
      [
        '--name=e2e',
        `--data-dir=${path.join(dir, 'etcd-data')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=e2e=${peerUrl}`,
        '--initial-cluster-state=new',
        // A throw-away store: durability buys nothing and fsync costs seconds.
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      dir,
    );
    procs.push(etcd);
    writeFileSync(path.join(dir, 'pids'), `${etcd.child.pid ?? ''}\n`);
    await waitUntil('etcd /health', deadline, [etcd], async () => {
      const r = await httpGet(`${etcdUrl}/health`);
      return r.status === 200 && r.body.includes('"true"') ? true : `etcd /health ${r.status} ${r.body}`;
    });

    // kube-apiserver --------------------------------------------------------
    const apiserver = startProcess(
      'kube-apiserver',
      path.join(binDir, 'kube-apiserver'),
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--cert-dir=${path.join(dir, 'apiserver-certs')}`,
        `--tls-cert-file=${servingCert}`,
        `--tls-private-key-file=${servingKey}`,
        `--client-ca-file=${caFile}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        // Only used to allocate ClusterIPs in storage; nothing listens there.
        '--service-cluster-ip-range=10.0.0.0/24',
        // Loopback may not be published as the `kubernetes` Service endpoint.
        '--endpoint-reconciler-type=none',
        '--allow-privileged=true',
        '--profiling=false',
        `-v=${opts.verbosity ?? 1}`,
        ...(opts.apiserverArgs ?? []),
      ],
      dir,
    );
    procs.push(apiserver);
    writeFileSync(path.join(dir, 'pids'), `${etcd.child.pid ?? ''}\n${apiserver.child.pid ?? ''}\n`);

    const tls: TlsMaterial = { ca: ca.certPem, cert: admin.certPem, key: admin.keyPem };
    await waitUntil('kube-apiserver /readyz', deadline, procs, async () => {
      const r = await httpGet(`${server}/readyz`, tls);
      return r.status === 200 ? true : `/readyz ${r.status}: ${r.body.split('\n').filter((l) => l.includes('[-]')).join(' ')}`;
    });
    // The `default` namespace is created by a post-start controller that
    // /readyz does not wait for.
    await waitUntil('namespace default', deadline, procs, async () => {
      const r = await httpGet(`${server}/api/v1/namespaces/default`, tls);
      return r.status === 200 ? true : `GET namespaces/default ${r.status}`;
    });
    const startupMs = Date.now() - started;

    // kubeconfig ------------------------------------------------------------
    const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
    const kubeconfigPath = path.join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfigPath,
      toYaml({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'e2e', cluster: { server, 'certificate-authority-data': b64(ca.certPem) } }],
        users: [
          {
            name: 'e2e-admin',
            user: { 'client-certificate-data': b64(admin.certPem), 'client-key-data': b64(admin.keyPem) },
          },
        ],
        contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: 'e2e-admin', namespace: 'default' } }],
        'current-context': 'e2e',
      }),
      { mode: 0o600 },
    );

    let stopped: Promise<void> | undefined;
    const kubectl = (args: string[], kopts?: KubectlOptions): Promise<KubectlResult> =>
      runKubectl(binDir, kubeconfigPath, dir, args, kopts);
    const kubectlOk = async (args: string[], kopts?: KubectlOptions): Promise<string> => {
      const r = await kubectl(args, kopts);
      if (r.code !== 0) {
        throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
      }
      return r.stdout;
    };
    return {
      server,
      kubeconfigPath,
      caPem: ca.certPem,
      ca,
      admin,
      binDir,
      dir,
      etcdUrl,
      startupMs,
      kubectl,
      kubectlOk,
      async ensureNamespace(name: string): Promise<void> {
        const manifest = toYaml({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }) +
          '---\n' +
          toYaml({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: name } });
        await kubectlOk(['apply', '-f', '-'], { input: manifest });
      },
      stop(): Promise<void> {
        stopped ??= (async () => {
          await stopProcess(apiserver, 10_000);
          await stopProcess(etcd, 10_000);
          liveClusters.delete(handle);
          if (watchdog.exitCode === null) watchdog.kill('SIGKILL');
          rmSync(dir, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  } catch (err) {
    for (const p of procs.slice().reverse()) await stopProcess(p, 5_000);
    liveClusters.delete(handle);
    if (watchdog.exitCode === null) watchdog.kill('SIGKILL');
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
