// The image, built from the Dockerfile as it is and run the way manifests/base/deployment.yaml runs it.
//
// buildah builds the Dockerfile unchanged (`--isolation chroot --pull=never`) against local stand-ins of its two
// base images (test/e2e/image/stand-in-bases.sh says what they are, and the test prints how they differ from the
// public ones). runc then runs the result as the kubelet would: user 65532, the Deployment's args and env, a
// read-only root filesystem, no capabilities, the certificate volume in memory and a service-account token where
// a pod has it. kube-apiserver calls the webhook in the image for a Sandbox pod; the wrapper init container's
// command from that very patch runs from the same image; and what a security review checks is asserted on the
// image's files.
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:https';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { serviceAccountIdentity, type Identity } from './support/identities.js';
import { at } from './support/json.js';
import {
  buildImage,
  openImage,
  standInBuildah,
  STAND_IN_NOTICE,
  treeBytes,
  type Buildah,
  type OpenedImage,
} from './support/image-build.js';
import { runContainer, startContainer, type ContainerSpec, type RunningContainer } from './support/oci-container.js';
import { createSandbox, sandboxPod } from './support/sandbox-pods.js';
import { freePort } from './support/webhook-process.js';
import { startEnvdDouble } from '../support/envd-double.js';
import { waitUntil } from '../support/wait-until.js';
import { wrappedSandboxPod } from '../support/wrapped-sandbox-pod.js';

const run = promisify(execFile);

const TAG = 'localhost/sandbox-injector:e2e';
const PACKAGE = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
  description: string;
  license: string;
};
// A version of its own, so the labels prove VERSION reaches them rather than the Dockerfile's default.
const VERSION = `${PACKAGE.version}-e2e`;
/**
 * The image's budget, uncompressed, as its files take on disk: about a fifth over what was measured
 * (test/e2e/README.md, "The image"). /app is what the Dockerfile adds (production node_modules, most of it
 * @kubernetes/client-node; dist; two files) and is held on its own, so a build tool or a dev dependency slipping
 * in shows at once. The whole is measured on the stand-in runtime base, which is close to distroless's size but
 * not equal to it.
 */
const BUDGET = { imageBytes: 288 * 1024 * 1024, appBytes: 96 * 1024 * 1024 };
const UID = 65532;
const NS = 'e2e-image';
/** Upstream's namespace (a stand-in): the injection ConfigMap and the Sandbox controller's account. */
const CONFIG_NS = 'sandbox-system';
/** Ours, where `kubectl apply -k manifests/` puts the webhook. */
const OWN_NS = 'sandbox-injector-system';
const CONTROLLER_SA = 'sandbox-controller-manager';
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const SHELLS = new Set(['sh', 'bash', 'dash', 'ash', 'zsh', 'ksh', 'mksh', 'csh', 'tcsh', 'fish', 'busybox', 'toybox']);

type Json = Record<string, unknown>;
interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}

let buildah: Buildah;
let image: OpenedImage;
let cluster: TestCluster;
let webhook: RunningContainer | undefined;
let webhookPort = 0;
let metricsPort = 0;
/** The host side of the container's certificate volume: a folder in /dev/shm, in memory as medium: Memory is. */
let certVolumeHost = '';
/** Folders the tests made (volumes, the token), removed at the end. */
const scratch: string[] = [];
function scratchDir(prefix: string, parent = tmpdir()): string {
  const dir = mkdtempSync(path.join(parent, prefix));
  scratch.push(dir);
  return dir;
}
/** The Sandbox pod as kube-apiserver stored it after calling the webhook in the image. */
let injectedPod: Json | undefined;

const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The JSON log lines of a container's output; other lines are left out. */
function jsonLines(text: string): Json[] {
  return text.split('\n').flatMap((line) => {
    try {
      const parsed: unknown = JSON.parse(line);
      return isRecord(parsed) ? [parsed] : [];
    } catch {
      return [];
    }
  });
}

function rendered(text: string): KubeObject[] {
  return parseAllDocuments(text).map((doc) => doc.toJS() as KubeObject);
}

/** Every path under `dir` (relative), depth first, without following links. */
function walk(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const relative = path.join(prefix, entry.name);
    out.push(relative);
    if (entry.isDirectory()) out.push(...walk(dir, relative));
  }
  return out;
}

function get(url: string, tls: boolean): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const done = (res: import('node:http').IncomingMessage): void => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    };
    const req = tls ? request(url, { rejectUnauthorized: false }, done) : httpRequest(url, done);
    req.on('error', reject);
    req.end();
  });
}

/** Polls `url` until it answers `status`, within the test's own deadline. */
function untilStatus(
  url: string,
  tls: boolean,
  status: number,
  timeoutMs = 60_000,
  container: RunningContainer | undefined = webhook,
): Promise<{ status: number; body: string }> {
  return waitUntil(() => get(url, tls).catch((error: unknown) => (error as Error).message), {
    what: `${url} to answer ${status}`,
    timeoutMs,
    intervalMs: 250,
    until: (got): got is { status: number; body: string } => typeof got !== 'string' && got.status === status,
    giveUp: () =>
      container?.hasExited() === true
        ? new Error(`the container exited; its output:\n${container.output()}`)
        : undefined,
    detail: () => `its output:\n${container?.output() ?? ''}`,
  });
}

/** A container of the image as the Deployment's pod template describes it, with the overrides a test needs. */
function asDeployed(overrides: Partial<ContainerSpec>): ContainerSpec {
  return { rootfs: image.rootfs, image: image.config, uid: UID, gid: UID, readOnlyRoot: true, ...overrides };
}

beforeAll(async () => {
  process.stderr.write(`${STAND_IN_NOTICE}\n`);
  const started = Date.now();
  [buildah, cluster] = await Promise.all([standInBuildah(), startCluster()]);
  process.stderr.write(`image e2e: stand-in bases ready after ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  const build = await buildImage(buildah, TAG, 'Dockerfile', VERSION);
  process.stderr.write(
    `image e2e: buildah bud of the Dockerfile ${build.ok ? 'built' : 'FAILED'} in ${build.seconds.toFixed(0)} s\n`,
  );
  if (!build.ok) throw new Error(`the Dockerfile did not build:\n${build.output.slice(-4000)}`);
  image = await openImage(buildah, TAG);
}, 1_800_000);

afterAll(async () => {
  await webhook?.remove();
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
  await image?.close();
  await cluster?.stop();
});

describe('the image built from the Dockerfile', () => {
  it('starts `node /app/dist/cli/main.js serve` as 65532, with node on PATH for the wrapper init container', () => {
    expect(image.config.User).toBe(`${UID}:${UID}`);
    expect(image.config.Entrypoint).toEqual(['/nodejs/bin/node', '/app/dist/cli/main.js']);
    expect(image.config.Cmd).toEqual(['serve']);
    expect(image.config.WorkingDir).toBe('/app');
    expect(image.config.Env).toContain('NODE_ENV=production');
    const pathEnv = (image.config.Env ?? []).find((e) => e.startsWith('PATH='));
    expect(pathEnv?.split(/[=:]/)[1]).toBe('/nodejs/bin');
    expect(Object.keys(image.config.ExposedPorts ?? {}).sort()).toEqual(['8443/tcp', '9090/tcp']);
  });

  it('runs as 65532 by its own USER, without a runAsUser (numeric, so the kubelet can check runAsNonRoot)', async () => {
    const [uid, gid] = (image.config.User ?? '').split(':').map(Number);
    if (uid === undefined || gid === undefined || Number.isNaN(uid) || Number.isNaN(gid)) {
      throw new Error(`the image's USER is not numeric uid:gid: ${JSON.stringify(image.config.User)}`);
    }
    const result = await runContainer(
      asDeployed({ uid, gid, command: ['node'], args: ['-e', 'console.log(process.getuid(), process.getgid())'] }),
    );
    expect(result.code, result.output).toBe(0);
    expect(result.output.trim()).toBe(`${UID} ${UID}`);
  });

  it('carries the OCI labels, the version given as VERSION', () => {
    expect(image.config.Labels).toMatchObject({
      'org.opencontainers.image.title': 'sandbox-injector',
      'org.opencontainers.image.description': PACKAGE.description,
      'org.opencontainers.image.version': VERSION,
      'org.opencontainers.image.licenses': PACKAGE.license,
    });
  });

  it('has no shell anywhere, and a shell cannot be started in it', async () => {
    const shells = walk(image.rootfs).filter((p) => SHELLS.has(path.basename(p)));
    expect(shells).toEqual([]);
    const tried = await runContainer(asDeployed({ command: ['/bin/sh'], args: ['-c', 'echo a shell ran'] }));
    expect(tried.code).not.toBe(0);
    expect(tried.output).toMatch(/\/bin\/sh: no such file or directory/);
  });

  it('ships /app with exactly the production dependencies of package-lock.json, no dev dependency', () => {
    const lock = JSON.parse(readFileSync(path.join(repoRoot, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
    };
    const entries = Object.entries(lock.packages).filter(([key]) => key.startsWith('node_modules/'));
    const production = new Set(entries.filter(([, p]) => p.dev !== true).map(([key]) => key));
    const dev = entries.filter(([, p]) => p.dev === true).map(([key]) => key);
    const installed = walk(path.join(image.rootfs, 'app')).filter(
      (p) =>
        /(^|\/)node_modules\/(@[^/]+\/)?[^/@][^/]*$/.test(p) &&
        existsSync(path.join(image.rootfs, 'app', p, 'package.json')),
    );
    expect(installed.filter((p) => !production.has(p))).toEqual([]);
    expect(dev.filter((p) => existsSync(path.join(image.rootfs, 'app', p)))).toEqual([]);
    const required = [...production].filter(
      (key) => lock.packages[key]?.optional !== true && lock.packages[key]?.devOptional !== true,
    );
    expect(required.filter((key) => !installed.includes(key))).toEqual([]);
  });

  it('ships our code without source maps or tests, and nothing of the repository but the two files it needs', () => {
    const app = path.join(image.rootfs, 'app');
    expect(readdirSync(app).sort()).toEqual(['dist', 'manifests', 'node_modules', 'package.json', 'src']);
    expect(walk(path.join(app, 'src'))).toEqual(['wrapper', path.join('wrapper', 'run_with_envs.sh')]);
    expect(walk(path.join(app, 'manifests'))).toEqual([
      'components',
      path.join('components', 'injection-config'),
      path.join('components', 'injection-config', 'injection-config.yaml'),
    ]);
    const dist = walk(path.join(app, 'dist'));
    expect(dist).toContain(path.join('cli', 'main.js'));
    expect(dist.filter((p) => p.endsWith('.map'))).toEqual([]);
    expect(dist.filter((p) => /(^|\/)(test|tests|__tests__)(\/|$)|\.(test|spec)\.js$/.test(p))).toEqual([]);
    const mapped = dist.filter(
      (p) => p.endsWith('.js') && readFileSync(path.join(app, 'dist', p), 'utf8').includes('sourceMappingURL'),
    );
    expect(mapped).toEqual([]);
  });

  it('injects examples/pod.yaml offline with the injection config it carries at /app/manifests', async () => {
    const examples = path.join(repoRoot, 'examples');
    const result = await runContainer(
      asDeployed({
        args: [
          'inject',
          '--config-file',
          '/app/manifests/components/injection-config/injection-config.yaml',
          '-f',
          '/examples/pod.yaml',
        ],
        volumes: [{ mountPath: '/examples', hostPath: examples, readOnly: true }],
      }),
    );
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('agents.kruise.io/runtime-injection-status: \'{"injected":["agent-runtime","csi"]');
  });

  it(`stays under its size budget (${BUDGET.imageBytes / 1048576} MiB in all, ${BUDGET.appBytes / 1048576} MiB for /app)`, async () => {
    const [all, app, modules, dist] = await Promise.all([
      treeBytes(image.rootfs),
      treeBytes(path.join(image.rootfs, 'app')),
      treeBytes(path.join(image.rootfs, 'app', 'node_modules')),
      treeBytes(path.join(image.rootfs, 'app', 'dist')),
    ]);
    const mib = (n: number): string => `${(n / 1048576).toFixed(1)} MiB`;
    process.stderr.write(
      `image e2e: image size ${mib(all)} uncompressed (on the stand-in runtime base); /app ${mib(app)}: node_modules ${mib(modules)}, dist ${mib(dist)}\n`,
    );
    expect(app).toBeLessThan(BUDGET.appBytes);
    expect(all).toBeLessThan(BUDGET.imageBytes);
  });
});

describe('serve from the image, run as manifests/base/deployment.yaml runs it, in cluster mode', () => {
  let controller: Identity;
  let deployment: KubeObject;

  beforeAll(async () => {
    const objects = rendered(await cluster.kubectlOk(['kustomize', path.join(repoRoot, 'manifests')]));
    await cluster.installSandboxCrd();
    webhookPort = await freePort();
    metricsPort = await freePort();
    // Upstream's namespace and its injection ConfigMap, which the install reads and no longer applies.
    await cluster.ensureNamespace(CONFIG_NS);
    await cluster.kubectlOk([
      'apply',
      '-f',
      path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml'),
    ]);
    // Everything `kubectl apply -k manifests/` creates but the Deployment, which this test runs itself. There is
    // no Service routing here, so the webhook configuration calls the container on loopback by URL.
    for (const object of objects) {
      if (object.kind === 'Deployment') {
        deployment = object;
        continue;
      }
      if (object.kind === 'MutatingWebhookConfiguration') {
        for (const hook of (object.webhooks as Json[] | undefined) ?? []) {
          hook.clientConfig = { url: `https://127.0.0.1:${webhookPort}/mutate` };
        }
      }
      await cluster.applyObject(object);
    }
    await cluster.ensureNamespace(NS);
    await cluster.applyObject({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: CONTROLLER_SA, namespace: CONFIG_NS },
    });
    await cluster.applyObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'e2e-create-pods', namespace: NS },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['create'] }],
    });
    await cluster.applyObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'e2e-create-pods', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'e2e-create-pods' },
      subjects: [{ kind: 'ServiceAccount', name: CONTROLLER_SA, namespace: CONFIG_NS }],
    });
    controller = await serviceAccountIdentity(cluster, CONFIG_NS, CONTROLLER_SA);

    // The pod's service-account volume, as the kubelet projects it: a token of the Deployment's service account.
    const podSpec = at(deployment, 'spec', 'template', 'spec') as Json;
    const serviceAccount = podSpec.serviceAccountName as string;
    const saDir = scratchDir('si-e2e-image-sa-');
    writeFileSync(
      path.join(saDir, 'token'),
      (await cluster.kubectlOk(['create', 'token', serviceAccount, '-n', OWN_NS, '--duration=1h'])).trim(),
    );
    writeFileSync(path.join(saDir, 'ca.crt'), cluster.caPem);
    writeFileSync(path.join(saDir, 'namespace'), OWN_NS);
    chmodSync(saDir, 0o755);

    const container = (podSpec.containers as Json[])[0] as Json;
    const env = Object.fromEntries(
      ((container.env as { name: string; value: string }[] | undefined) ?? []).map((e) => [e.name, e.value]),
    );
    const mounts = container.volumeMounts as { name: string; mountPath: string }[];
    const certMount = mounts.find((m) => m.name === 'certs');
    if (certMount === undefined) throw new Error('the Deployment no longer mounts its certs volume');
    expect(at(podSpec, 'volumes', 0, 'emptyDir', 'medium')).toBe('Memory');
    // An emptyDir of a pod with fsGroup 65532: the group owns it.
    certVolumeHost = scratchDir('si-e2e-image-certs-', '/dev/shm');
    chownSync(certVolumeHost, UID, at(podSpec, 'securityContext', 'fsGroup') as number);
    chmodSync(certVolumeHost, 0o770);
    const url = new URL(cluster.server);
    webhook = startContainer(
      asDeployed({
        uid: at(container, 'securityContext', 'runAsUser') as number,
        gid: at(container, 'securityContext', 'runAsGroup') as number,
        readOnlyRoot: at(container, 'securityContext', 'readOnlyRootFilesystem') === true,
        // The Deployment's args, then what this machine needs instead of a pod network: loopback, ports free
        // here, and the address kube-apiserver dials in the certificate.
        args: [
          ...(container.args as string[]),
          '--host=127.0.0.1',
          `--port=${webhookPort}`,
          `--metrics-port=${metricsPort}`,
          '--cert-extra-sans=127.0.0.1',
        ],
        // The kubelet sets these in every container; here they name the test's kube-apiserver.
        env: { ...env, KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port },
        volumes: [
          { mountPath: certMount.mountPath, hostPath: certVolumeHost },
          { mountPath: SA_DIR, hostPath: saDir, readOnly: true },
        ],
      }),
    );
    await untilStatus(`https://127.0.0.1:${webhookPort}/readyz`, true, 200, 90_000);
  }, 300_000);

  it('runs exactly as the Deployment says: user, read-only root, no capabilities, its args', () => {
    const container = (at(deployment, 'spec', 'template', 'spec', 'containers', 0) ?? {}) as Json;
    expect(at(container, 'securityContext', 'readOnlyRootFilesystem')).toBe(true);
    expect(at(container, 'securityContext', 'runAsUser')).toBe(UID);
    expect(at(container, 'securityContext', 'capabilities', 'drop')).toEqual(['ALL']);
    expect(at(container, 'args', 0)).toBe('serve');
    expect(at(container, 'command')).toBeUndefined();
  });

  it('answers /healthz and /readyz on the webhook port (HTTPS) and /metrics, /healthz, /readyz on the metrics port', async () => {
    expect((await get(`https://127.0.0.1:${webhookPort}/healthz`, true)).status).toBe(200);
    expect((await get(`https://127.0.0.1:${webhookPort}/readyz`, true)).status).toBe(200);
    expect((await get(`http://127.0.0.1:${metricsPort}/healthz`, false)).status).toBe(200);
    expect((await get(`http://127.0.0.1:${metricsPort}/readyz`, false)).status).toBe(200);
    const metrics = await get(`http://127.0.0.1:${metricsPort}/metrics`, false);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^# HELP sandbox_injector_/m);
  });

  it('fills the webhook configuration caBundle itself (self-managed certificates) and keeps the pair in its volume', async () => {
    const caBundle = (): Promise<string> =>
      cluster.kubectlOk([
        'get',
        'mutatingwebhookconfiguration',
        'sandbox-injector',
        '-o',
        'jsonpath={.webhooks[0].clientConfig.caBundle}',
      ]);
    const bundle = await waitUntil(caBundle, {
      what: 'the webhook configuration caBundle to be filled',
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    expect(Buffer.from(bundle, 'base64').toString('utf8')).toContain('BEGIN CERTIFICATE');
    const secret = await cluster.kubectlOk(['get', 'secret', 'sandbox-injector-tls', '-n', OWN_NS, '-o', 'name']);
    expect(secret.trim()).toBe('secret/sandbox-injector-tls');
    // Written into its in-memory volume, the one place the container can write.
    const pair = (): string[] => readdirSync(certVolumeHost).filter((name) => name === 'tls.crt' || name === 'tls.key');
    await waitUntil(pair, {
      what: 'the pair in the certificate volume',
      timeoutMs: 30_000,
      intervalMs: 250,
      until: (names) => names.length === 2,
    });
    expect(pair().sort()).toEqual(['tls.crt', 'tls.key']);
  });

  it('has a root filesystem nothing can write to, as the same user with the same image', async () => {
    const tried = await runContainer(
      asDeployed({ command: ['node'], args: ['-e', "require('node:fs').writeFileSync('/app/written', 'x')"] }),
    );
    expect(tried.code).not.toBe(0);
    expect(tried.output).toMatch(/EROFS|read-only file system/);
    expect(existsSync(path.join(image.rootfs, 'app', 'written'))).toBe(false);
  });

  it('is called by kube-apiserver for a Sandbox pod, and its patch is in the stored pod', async () => {
    const uid = await createSandbox(cluster, NS, 'sbx', {
      runtimes: [{ name: 'agent-runtime' }],
      envVarsInjectionPolicy: 'Auto',
      template: {},
    });
    const pod = sandboxPod(NS, 'sbx', uid, [{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }]);
    const created = await controller.kubectl(['create', '-f', '-', '-o', 'json'], { input: JSON.stringify(pod) });
    expect(created.code, created.stderr).toBe(0);
    injectedPod = JSON.parse(created.stdout) as Json;
    const initNames = ((at(injectedPod, 'spec', 'initContainers') as Json[] | undefined) ?? []).map((c) => c.name);
    expect(initNames).toEqual(['agent-runtime', 'sandbox-env-wrapper']);
    expect(at(injectedPod, 'spec', 'containers', 0, 'command')).toEqual([
      '/bin/bash',
      '/var/sandbox/run_with_envs.sh',
      '--',
    ]);
    await webhook?.waitForOutput(
      (text) => jsonLines(text).some((l) => l.msg === 'admission' && l.namespace === NS),
      'the admission log line',
    );
  });

  it('drains on SIGTERM (/readyz turns 503 first) and exits 0', async () => {
    const running = webhook;
    if (running === undefined) throw new Error('the webhook container is not running');
    await running.kill('SIGTERM');
    await untilStatus(`https://127.0.0.1:${webhookPort}/readyz`, true, 503, 5_000);
    const code = await Promise.race([
      running.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`still running 30 s after SIGTERM:\n${running.output()}`)), 30_000),
      ),
    ]);
    expect(code).toBe(0);
    const lines = jsonLines(running.output());
    expect(lines.filter((l) => l.msg === 'shutting down: draining in-flight admissions').map((l) => l.signal)).toEqual([
      'SIGTERM',
    ]);
    expect(lines.filter((l) => l.msg === 'stopped').map((l) => l.forced)).toEqual([false]);
  });
});

describe('the wrapper init container, from the same image', () => {
  it('runs the command of the injected init container and leaves run_with_envs.sh, byte for byte, mode 0755', async () => {
    if (injectedPod === undefined) throw new Error('needs the Sandbox pod injected by the image (test above)');
    const init = ((at(injectedPod, 'spec', 'initContainers') as Json[]) ?? []).find(
      (c) => c.name === 'sandbox-env-wrapper',
    ) as Json;
    const mount = (init.volumeMounts as { mountPath: string }[])[0];
    if (mount === undefined) throw new Error('the wrapper init container mounts nothing');
    // The same image the webhook runs: SANDBOX_INJECTOR_WRAPPER_IMAGE equals the Deployment's image.
    const deployed = at(
      rendered(await cluster.kubectlOk(['kustomize', path.join(repoRoot, 'manifests')])).find(
        (o) => o.kind === 'Deployment',
      ),
      'spec',
      'template',
      'spec',
      'containers',
      0,
    ) as Json;
    expect(init.image).toBe(deployed.image);
    // A fresh emptyDir: world-writable, as the kubelet makes it.
    const dir = scratchDir('si-e2e-image-wrapper-');
    chmodSync(dir, 0o777);
    const result = await runContainer(
      asDeployed({
        command: init.command as string[],
        args: [],
        volumes: [{ mountPath: mount.mountPath, hostPath: dir }],
      }),
    );
    expect(result.output).toContain(`installed ${path.join(mount.mountPath, 'run_with_envs.sh')}`);
    expect(result.code).toBe(0);
    expect(readdirSync(dir)).toEqual(['run_with_envs.sh']);
    const script = path.join(dir, 'run_with_envs.sh');
    expect(readFileSync(script).equals(readFileSync(path.join(repoRoot, 'src', 'wrapper', 'run_with_envs.sh')))).toBe(
      true,
    );
    expect(statSync(script).mode & 0o7777).toBe(0o755);
    expect(lstatSync(script).uid).toBe(UID);

    // Run by bash, as a wrapped container runs it: the claimed environment reaches the command.
    const envDir = scratchDir('si-e2e-image-env-');
    writeFileSync(path.join(envDir, 'env.sh'), "GREETING='from the image'\n");
    writeFileSync(path.join(envDir, '.env_ready'), '');
    const { stdout } = await run('bash', [script, '--', 'printenv', 'GREETING'], {
      env: { ...process.env, SANDBOX_ENV_DIR: envDir },
    });
    expect(stdout).toBe('from the image\n');
  });
});

describe('deliver-env, from the same image', () => {
  const DELIVER_NS = 'e2e-image-deliver';
  const COMPONENT = path.join(repoRoot, 'manifests', 'components', 'deliver-env');
  const TOKEN = 'tok-image-e2e';
  const VARS = { GREETING: "from the image's deliver-env", QUOTED: 'say "hi" to $HOME' };

  it("runs as the component's container runs it, and delivers a claim through the envd double", async () => {
    const objects = readdirSync(COMPONENT)
      .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
      .flatMap((file) => rendered(readFileSync(path.join(COMPONENT, file), 'utf8')));
    const deployment = objects.find((o) => o.kind === 'Deployment');
    if (deployment === undefined) throw new Error('manifests/components/deliver-env has no Deployment');
    const namespace = deployment.metadata.namespace ?? OWN_NS;
    await cluster.installSandboxCrd();
    // The webhook container of the tests above has stopped: its configuration (failurePolicy Fail) would refuse
    // the Sandbox pod this test creates.
    await cluster.kubectlOk(['delete', 'mutatingwebhookconfigurations', '--all']);
    await cluster.ensureNamespace(namespace);
    await cluster.ensureNamespace(DELIVER_NS);
    // Where the component's Role reads the injection ConfigMap.
    await cluster.ensureNamespace(CONFIG_NS);
    for (const object of objects) if (object.kind !== 'Deployment') await cluster.applyObject(object);

    // The pod's service-account volume, as the kubelet projects it for the component's service account.
    const podSpec = at(deployment, 'spec', 'template', 'spec') as Json;
    const saDir = scratchDir('si-e2e-image-deliver-sa-');
    const token = await cluster.kubectlOk([
      'create',
      'token',
      podSpec.serviceAccountName as string,
      '-n',
      namespace,
      '--duration=1h',
    ]);
    writeFileSync(path.join(saDir, 'token'), token.trim());
    writeFileSync(path.join(saDir, 'ca.crt'), cluster.caPem);
    writeFileSync(path.join(saDir, 'namespace'), namespace);
    chmodSync(saDir, 0o755);

    // envd is not run here: the double follows its published file API over a folder standing for /var/sandbox.
    const envDir = scratchDir('si-e2e-image-deliver-env-');
    const envd = await startEnvdDouble({ root: envDir, token: TOKEN });
    const container = (podSpec.containers as Json[])[0] as Json;
    const port = await freePort();
    const url = new URL(cluster.server);
    const running = startContainer(
      asDeployed({
        uid: at(container, 'securityContext', 'runAsUser') as number,
        gid: at(container, 'securityContext', 'runAsGroup') as number,
        readOnlyRoot: at(container, 'securityContext', 'readOnlyRootFilesystem') === true,
        // The component's args, then loopback instead of a pod network: the listener, and envd on the double's port.
        args: [
          ...(container.args as string[]),
          '--host=127.0.0.1',
          `--metrics-port=${port}`,
          `--runtime-port=${envd.port}`,
        ],
        env: {
          SANDBOX_INJECTOR_IDENTITY: 'image-replica',
          KUBERNETES_SERVICE_HOST: url.hostname,
          KUBERNETES_SERVICE_PORT: url.port,
        },
        volumes: [{ mountPath: SA_DIR, hostPath: saDir, readOnly: true }],
      }),
    );
    try {
      await untilStatus(`http://127.0.0.1:${port}/readyz`, false, 200, 90_000, running);

      // A claimed Sandbox and its wrapped pod, whose IP is loopback, where the double listens.
      await cluster.applyObject({
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'Sandbox',
        metadata: { name: 'sbx-image', namespace: DELIVER_NS },
        spec: {
          runtimes: [{ name: 'agent-runtime' }],
          template: { spec: { containers: [{ name: 'main', image: 'app:1' }] } },
        },
      });
      const uid = (
        await cluster.kubectlOk(['-n', DELIVER_NS, 'get', 'sandbox', 'sbx-image', '-o', 'jsonpath={.metadata.uid}'])
      ).trim();
      await cluster.applyObject(wrappedSandboxPod({ sandbox: 'sbx-image', sandboxUid: uid, namespace: DELIVER_NS }));
      // Running at the double's address, as a kubelet would report it (there is none here: the admin writes it).
      await cluster.kubectlOk([
        '-n',
        DELIVER_NS,
        'patch',
        'pod',
        'sbx-image-pod',
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }] } }),
      ]);
      // And named by the Sandbox's status, as upstream's controller writes it: deliver-env goes by that UID.
      const podUID = (
        await cluster.kubectlOk(['-n', DELIVER_NS, 'get', 'pod', 'sbx-image-pod', '-o', 'jsonpath={.metadata.uid}'])
      ).trim();
      await cluster.kubectlOk([
        ...['-n', DELIVER_NS, 'patch', 'sandbox', 'sbx-image', '--subresource=status', '--type=merge'],
        ...['-p', JSON.stringify({ status: { podInfo: { podUID, podIP: '127.0.0.1' } } })],
      ]);
      await cluster.kubectlOk([
        '-n',
        DELIVER_NS,
        'annotate',
        '--overwrite',
        'sandbox',
        'sbx-image',
        `agents.kruise.io/init-runtime-request=${JSON.stringify({ envVars: VARS, accessToken: TOKEN })}`,
        `agents.kruise.io/claim-timestamp=${new Date().toISOString()}`,
      ]);

      await running.waitForOutput(
        (text) => jsonLines(text).some((l) => l.msg === 'env delivered'),
        'the env delivered line',
        60_000,
      );
      expect(existsSync(path.join(envDir, '.env_ready'))).toBe(true);
      const { stdout } = await run(
        'bash',
        [path.join(repoRoot, 'src', 'wrapper', 'run_with_envs.sh'), '--', 'printenv', 'GREETING', 'QUOTED'],
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SANDBOX_ENV_DIR: envDir } },
      );
      expect(stdout).toBe(`${VARS.GREETING}\n${VARS.QUOTED}\n`);
      expect(running.output()).not.toContain(VARS.GREETING);

      await running.kill('SIGTERM');
      expect(await running.exited).toBe(0);
    } catch (error) {
      throw new Error(`${(error as Error).message}\ndeliver-env's output:\n${running.output()}`, { cause: error });
    } finally {
      await running.remove();
      await envd.close();
    }
  }, 300_000);
});
