// `sandbox-injector deliver-env` on a real kube-apiserver, writing through a loopback envd double that follows
// envd's published file API (test/support/envd-double.ts; it is not the real envd), into temp dirs that stand
// for pods' /var/sandbox, where the real run_with_envs.sh waits under bash. The controller runs as the service
// account of manifests/components/deliver-env with that component's RBAC, and nothing more.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderEnvFile } from '../../src/envfile/render-env-file.js';
import type { EnvdDouble } from '../support/envd-double.js';
import { repoRoot, type TestCluster } from './support/cluster.js';
import { metricsText, startDeliverProcess, type DeliverProcess } from './support/deliver-process.js';
import {
  controllerArgs,
  deliverCluster,
  deliverWorld,
  FIRST_DELIVERY,
  firstDeliveryIn,
  readyWritten,
  claimShapes,
  shapes,
  until,
  writes,
} from './support/deliver-world.js';

const NS = 'e2e-deliver';
const LEASE_NS = 'sandbox-injector-system';
const WRAPPER = path.join(repoRoot, 'src', 'wrapper', 'run_with_envs.sh');
const TOKEN = 'tok-e2e-1';
let serviceAccountKubeconfig: string;

/** Values that a careless writer would break: quotes, $, backslashes, newlines, unicode, empty. */
const CLAIM_VARS: Record<string, string> = {
  SINGLE_QUOTED: "it's 'quoted'",
  DOUBLE_QUOTED: 'say "hi" to $HOME and `id` and $(id)',
  BACKSLASHES: 'C:\\path\\to\\n',
  MULTI_LINE: 'line one\nline two\n\nline four',
  UNICODE: 'héllo wörld 🌍 日本語',
  EMPTY: '',
  API_KEY: 'sk-e2e-secret-0001',
};

let cluster: TestCluster;
let controller: DeliverProcess;
const world = deliverWorld(() => cluster, NS);
const { tempDir, createSandbox, createPod, setPodIp, events } = world;
const envd = (token: string | undefined = TOKEN) => world.envd({ token });
const claim = (sandbox: string, vars: Record<string, string>, accessToken = TOKEN) =>
  world.claim(sandbox, vars, accessToken);

/** Runs the real wrapper under bash on `dir`; resolves to the environment the wrapped command started with. */
function runWrapped(dir: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'bash',
      [WRAPPER, '--', process.execPath, '-e', 'process.stdout.write(JSON.stringify(process.env))'],
      {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SANDBOX_ENV_DIR: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`wrapped command exited ${code}: ${err}`));
      else resolve(JSON.parse(out) as Record<string, string>);
    });
  });
}

/** What the wrapped command sees beyond what it would see with no env.sh: the delivered variables. */
async function deliveredVariables(dir: string): Promise<Record<string, string>> {
  const withEnv = await runWrapped(dir);
  const bare = tempDir('si-e2e-bare-');
  await import('node:fs/promises').then((fs) => fs.writeFile(path.join(bare, '.env_ready'), ''));
  const without = await runWrapped(bare);
  return Object.fromEntries(
    Object.entries(withEnv).filter(([key, value]) => without[key] !== value && key !== 'SANDBOX_ENV_DIR'),
  );
}

/** The values (six characters or more) found in `text`, as written or JSON-escaped. */
function valuesIn(text: string, values: readonly string[]): string[] {
  return values.filter(
    (value) => value.length >= 6 && (text.includes(value) || text.includes(JSON.stringify(value).slice(1, -1))),
  );
}

const valuesInLogs = (logs: readonly Record<string, unknown>[], values: readonly string[]): string[] =>
  valuesIn(JSON.stringify(logs), values);

const CONTROLLER_ARGS = (port: number): string[] => controllerArgs(port, LEASE_NS);

describe('deliver-env on a real kube-apiserver', () => {
  let main: { double: EnvdDouble; dir: string };

  beforeAll(async () => {
    ({ cluster, kubeconfigPath: serviceAccountKubeconfig } = await deliverCluster(NS, LEASE_NS));
    main = await envd();
    controller = await startDeliverProcess(
      cluster,
      'replica-a',
      CONTROLLER_ARGS(main.double.port),
      serviceAccountKubeconfig,
    );
  });

  afterAll(async () => {
    await controller?.stop();
    await world.close();
    await cluster?.stop();
  });

  it("starts the waiting command with exactly the claim's variables, found by the pod IP", async () => {
    await createSandbox({ name: 'sbx-main' });
    const waiting = runWrapped(main.dir);
    await claim('sbx-main', CLAIM_VARS);
    await waiting;
    await until('the upload of .env_ready answered', () => readyWritten(main.double));
    expect(await deliveredVariables(main.dir)).toEqual(CLAIM_VARS);
    // Beside them, the wrapper's own wake FIFO when it got to wait before .env_ready came (docs/env-file.md).
    expect(
      readdirSync(main.dir)
        .filter((name) => name !== '.env_wake')
        .sort(),
    ).toEqual(['.env_ready', 'env.sh']);
    // The wrapper waited on its FIFO, so the wake byte went to it last.
    expect(claimShapes(main.double)).toEqual([...FIRST_DELIVERY, 'upload /var/sandbox/.env_wake']);
    const delivered = await until('EnvDelivered Event', async () =>
      (await events('sbx-main')).find((e) => e.reason === 'EnvDelivered'),
    );
    expect(delivered.message).toMatch(/7 variables/);
    expect(valuesIn(JSON.stringify(await events('sbx-main')), Object.values(CLAIM_VARS))).toEqual([]);
    expect(valuesInLogs(controller.logs, [...Object.values(CLAIM_VARS), TOKEN])).toEqual([]);
    const metrics = await metricsText(controller.metricsPort());
    expect(metrics).toMatch(/sandbox_injector_env_deliveries_total\{outcome="delivered"\} 1/);
    expect(metrics).toMatch(/sandbox_injector_env_claim_to_ready_seconds_count 1/);
  });

  it('writes nothing again after a restart', async () => {
    const before = writes(main.double).length;
    const getsBefore = main.double.requests.filter((r) => r.operation === 'get').length;
    await controller.stop();
    const from = controller.logs.length;
    await controller.start();
    await controller.logged(
      (l, i = controller.logs.indexOf(l)) =>
        i >= from && l.msg === 'env already delivered' && l.sandbox === `${NS}/sbx-main`,
      'looked again',
    );
    expect(main.double.requests.filter((r) => r.operation === 'get').length).toBeGreaterThan(getsBefore);
    expect(writes(main.double).length).toBe(before);
  });

  it('rewrites a changed request through a temporary name, so no reader ever sees half a file', async () => {
    const changed = { ...CLAIM_VARS, API_KEY: 'sk-e2e-secret-0002', ADDED: 'x'.repeat(20_000) };
    const oldContent = renderEnvFile(CLAIM_VARS);
    const newContent = renderEnvFile(changed);
    const seen = new Set<string>();
    let reading = true;
    const reader = (async () => {
      while (reading) {
        try {
          seen.add(await readFile(path.join(main.dir, 'env.sh'), 'utf8'));
        } catch {
          seen.add('<missing>');
        }
      }
    })();
    const before = writes(main.double).length;
    await claim('sbx-main', changed);
    await until('new env.sh', async () =>
      (await readFile(path.join(main.dir, 'env.sh'), 'utf8')) === newContent ? true : undefined,
    );
    await until('new marker', () =>
      readFileSync(path.join(main.dir, '.env_ready'), 'utf8').startsWith('sha256:') &&
      writes(main.double).length === before + 3
        ? true
        : undefined,
    );
    reading = false;
    await reader;
    expect([...seen].filter((content) => content !== oldContent && content !== newContent)).toEqual([]);
    expect(
      writes(main.double)
        .slice(before)
        .map((r) => `${r.operation} ${(r.path ?? '').replace(/\.[0-9a-f]{16}\.tmp\b/g, '.<tmp>')}`),
    ).toEqual([
      'upload /var/sandbox/.env.sh.<tmp> /var/sandbox/.env_ready.<tmp>',
      'move /var/sandbox/env.sh',
      'move /var/sandbox/.env_ready',
    ]);
    expect(await deliveredVariables(main.dir)).toEqual(changed);
  });

  it('writes again into a new pod of the same Sandbox (a new UID, an empty volume)', async () => {
    const sandboxUid = (
      await cluster.kubectlOk(['-n', NS, 'get', 'sandbox', 'sbx-main', '-o', 'jsonpath={.metadata.uid}'])
    ).trim();
    await cluster.kubectlOk(['-n', NS, 'delete', 'pod', 'sbx-main-pod', '--wait=false', '--grace-period=0', '--force']);
    for (const name of readdirSync(main.dir)) rmSync(path.join(main.dir, name));
    const waiting = runWrapped(main.dir);
    await createPod('sbx-main', sandboxUid, { suffix: '-2', podIP: '127.0.0.1' });
    await waiting;
    expect(existsSync(path.join(main.dir, '.env_ready'))).toBe(true);
    expect((await deliveredVariables(main.dir)).API_KEY).toBe('sk-e2e-secret-0002');
  });

  it('never writes to an unclaimed Sandbox, nor to a pod with no wrapped container', async () => {
    const unclaimed = await envd();
    const unwrapped = await envd();
    const sentinel = await envd();
    await createSandbox({
      name: 'sbx-unclaimed',
      annotations: { 'agents.kruise.io/runtime-url': unclaimed.double.url },
    });
    await createSandbox({
      name: 'sbx-unwrapped',
      wrapped: false,
      annotations: { 'agents.kruise.io/runtime-url': unwrapped.double.url },
    });
    await claim('sbx-unwrapped', { A: 'unwrapped-value' });
    // Seen after the two above by the same watch: once it is delivered, they have been looked at.
    await createSandbox({ name: 'sbx-sentinel', annotations: { 'agents.kruise.io/runtime-url': sentinel.double.url } });
    await claim('sbx-sentinel', { A: 'sentinel' });
    await until('sentinel delivered', () => readyWritten(sentinel.double));
    // The unclaimed pod's folder is only looked at, for an earlier claim's files; nothing is written.
    expect(shapes(unclaimed.double)).toEqual(['list /var/sandbox']);
    expect(unwrapped.double.requests).toEqual([]);
    expect(readdirSync(unclaimed.dir)).toEqual([]);
    expect(readdirSync(unwrapped.dir)).toEqual([]);
  });

  it("after a resume, writes only to the new pod's own IP once the Sandbox names it, never to the address its status held", async () => {
    // The deleted pod's IP now belongs to another tenant's pre-warmed sandbox, whose envd takes any request.
    const stranger = await world.envd({ host: '127.0.0.2', port: main.double.port });
    const resumed = await world.envd({ token: TOKEN, host: '127.0.0.3', port: main.double.port });
    // The new pod, not yet running: no IP of its own, and the Sandbox still names the deleted pod.
    const { podUid } = await createSandbox({
      name: 'sbx-resume',
      podInfo: { podIP: '127.0.0.2', podUID: 'the-deleted-pod' },
      podIP: undefined,
    });
    await claim('sbx-resume', { API_KEY: 'sk-e2e-secret-resume' });
    // A later Sandbox delivered by the same controller: the claim above has been looked at by then.
    const sentinel = await envd();
    await createSandbox({
      name: 'sbx-resume-sentinel',
      annotations: { 'agents.kruise.io/runtime-url': sentinel.double.url },
    });
    await claim('sbx-resume-sentinel', { A: 'sentinel' });
    await until('sentinel delivered', () => readyWritten(sentinel.double));
    expect(resumed.double.requests).toEqual([]);
    await setPodIp('sbx-resume-pod', '127.0.0.3');
    // Running, but not named by the Sandbox: still nothing, until upstream's controller syncs its status. The
    // sentinel's change, seen after the pod's by the same controller, says the pod has been looked at.
    await claim('sbx-resume-sentinel', { A: 'sentinel-2' });
    await until('sentinel rewritten', () => (writes(sentinel.double).length >= 6 ? true : undefined));
    expect(resumed.double.requests).toEqual([]);
    await world.setPodInfo('sbx-resume', { podUID: podUid, podIP: '127.0.0.3' });
    await until('delivered to the new pod', () => firstDeliveryIn(resumed.double));
    expect(claimShapes(resumed.double)).toEqual(FIRST_DELIVERY);
    expect(stranger.double.requests).toEqual([]);
    expect(readdirSync(stranger.dir)).toEqual([]);
  });

  it("a claim without a request gets an empty env.sh; a recycle clears both files, with the claim's token", async () => {
    const pool = await envd();
    await createSandbox({ name: 'sbx-pool', annotations: { 'agents.kruise.io/runtime-url': pool.double.url } });
    // skip-init-runtime: the claim is the label and its time, with no request.
    await cluster.kubectlOk([
      '-n',
      NS,
      'label',
      '--overwrite',
      'sandbox',
      'sbx-pool',
      'agents.kruise.io/sandbox-claimed=true',
    ]);
    await cluster.kubectlOk([
      '-n',
      NS,
      'annotate',
      '--overwrite',
      'sandbox',
      'sbx-pool',
      `agents.kruise.io/claim-timestamp=${new Date().toISOString()}`,
      `agents.kruise.io/runtime-access-token=${TOKEN}`,
    ]);
    await until('empty claim delivered', () => readyWritten(pool.double));
    expect(readFileSync(path.join(pool.dir, 'env.sh'), 'utf8')).toBe(renderEnvFile({}));
    // The wrapped app starts, with no variable of a claim.
    expect(await deliveredVariables(pool.dir)).toEqual({});
    const emptied = await until('EnvDelivered Event', async () =>
      (await events('sbx-pool')).find((e) => e.reason === 'EnvDelivered'),
    );
    expect(emptied.message).toMatch(/0 variables/);

    // Recycle, as upstream's resetMetadataForPool: the label back to false, the claim's annotations gone.
    const from = pool.double.requests.length;
    await cluster.kubectlOk([
      '-n',
      NS,
      'label',
      '--overwrite',
      'sandbox',
      'sbx-pool',
      'agents.kruise.io/sandbox-claimed=false',
    ]);
    await cluster.kubectlOk([
      '-n',
      NS,
      'annotate',
      'sandbox',
      'sbx-pool',
      'agents.kruise.io/claim-timestamp-',
      'agents.kruise.io/runtime-access-token-',
    ]);
    await until('cleared', () =>
      existsSync(path.join(pool.dir, '.env_ready')) || existsSync(path.join(pool.dir, 'env.sh')) ? undefined : true,
    );
    // Reported once the whole clearing is done, the recycled mark included.
    await until('EnvCleared Event', async () => (await events('sbx-pool')).find((e) => e.reason === 'EnvCleared'));
    expect(shapes(pool.double, from)).toEqual([
      'list /var/sandbox',
      'remove /var/sandbox/.env_ready',
      'remove /var/sandbox/env.sh',
      'upload /var/sandbox/.env_recycled.<tmp>',
      'move /var/sandbox/.env_recycled',
    ]);
    // The double takes only the claim's token: the Removes were sent with it, though the annotation was gone.
    expect(pool.double.requests.slice(from).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
  });

  it('a wrong token gets an EnvDeliveryFailed Event and no file, and is not retried until the Sandbox changes', async () => {
    const target = await envd('the-right-token');
    await createSandbox({ name: 'sbx-token', annotations: { 'agents.kruise.io/runtime-url': target.double.url } });
    await claim('sbx-token', { API_KEY: 'sk-e2e-secret-token' }, 'a-wrong-token');
    const failed = await until('EnvDeliveryFailed Event', async () =>
      (await events('sbx-token')).find((e) => e.reason === 'EnvDeliveryFailed'),
    );
    expect(failed.message).toMatch(/unauthorized/);
    expect(failed.message).not.toMatch(/a-wrong-token|sk-e2e-secret-token/);
    expect(readdirSync(target.dir)).toEqual([]);
    // The claim's listing, refused, and nothing after it. Before it, if deliver-env saw the Sandbox before its
    // claim, the unclaimed pod's listing, refused too (this double wants a token from the start).
    const refused = target.double.requests.map((r) => `${r.operation} ${r.path ?? ''} ${r.status}`);
    expect(refused).toEqual(Array(refused.length === 2 ? 2 : 1).fill('list /var/sandbox 401'));
    // The right token is a change of the Sandbox: delivered then.
    await claim('sbx-token', { API_KEY: 'sk-e2e-secret-token' }, 'the-right-token');
    await until('delivered with the right token', () => readyWritten(target.double));
    expect(valuesInLogs(controller.logs, ['a-wrong-token', 'the-right-token', 'sk-e2e-secret-token'])).toEqual([]);
  });

  it('two replicas: one writes, the other follows and takes over when the first stops', async () => {
    const second = await startDeliverProcess(
      cluster,
      'replica-b',
      CONTROLLER_ARGS(main.double.port),
      serviceAccountKubeconfig,
    );
    try {
      const first = await envd();
      await createSandbox({ name: 'sbx-two', annotations: { 'agents.kruise.io/runtime-url': first.double.url } });
      await claim('sbx-two', { A: 'two-replicas' });
      await until('delivered once', () => firstDeliveryIn(first.double));
      // A second writer would have listed the folder and written too.
      expect(claimShapes(first.double)).toEqual(FIRST_DELIVERY);
      const follower = await metricsText(second.metricsPort());
      expect(follower).toMatch(/sandbox_injector_deliver_leader 0/);
      expect(follower).toMatch(/sandbox_injector_env_deliveries_total\{outcome="delivered"\} 0/);
      expect(await metricsText(controller.metricsPort())).toMatch(/sandbox_injector_deliver_leader 1/);
      const holder = await cluster.kubectlOk([
        '-n',
        LEASE_NS,
        'get',
        'lease',
        'sandbox-injector-deliver-env',
        '-o',
        'jsonpath={.spec.holderIdentity}',
      ]);
      expect(holder.trim()).toBe('replica-a');

      await controller.stop();
      await second.logged((l) => l.msg === 'holding the Lease: delivering', 'replica-b leads');
      const after = await envd();
      await createSandbox({ name: 'sbx-after', annotations: { 'agents.kruise.io/runtime-url': after.double.url } });
      await claim('sbx-after', { A: 'after-failover' });
      await until('delivered by replica-b', () => firstDeliveryIn(after.double));
      expect(claimShapes(after.double)).toEqual(FIRST_DELIVERY);
    } finally {
      await second.stop();
      await controller.start();
    }
  });
});
