// `explain --sandbox` on deliver-env's side, on a real kube-apiserver: each case of docs/explain.md ("Delivery")
// is made with the real deliver-env process, loopback envd doubles (test/support/envd-double.ts, not the real
// envd) and Sandboxes and pods as deliver-world.ts makes them, and explain is asked about it as a user would ask,
// with the cluster admin's kubeconfig and deliver-env's own flags.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Explanation } from '../../src/cli/explain/explanation.js';
import type { EnvdDouble } from '../support/envd-double.js';
import { repoRoot, type TestCluster } from './support/cluster.js';
import { startDeliverProcess, type DeliverProcess } from './support/deliver-process.js';
import { controllerArgs, deliverCluster, deliverWorld, firstDeliveryIn, until } from './support/deliver-world.js';
import type { KubectlResult as Run } from './support/kubectl.js';

const NS = 'e2e-explain-delivery';
const LEASE_NS = 'sandbox-injector-system';
const TOKEN = 'tok-explain';
const CLI = path.join(repoRoot, 'dist', 'cli', 'main.js');

let cluster: TestCluster;
let kubeconfig: string;
let port: number;
let controller: DeliverProcess;
const world = deliverWorld(() => cluster, NS);
const kubectl = (args: string[]) => cluster.kubectlOk(['-n', NS, ...args]);

/**
 * An envd double at `host`, on the port deliver-env dials when it knows only the pod's IP. Started without a
 * token, as a pool pod's envd is before its first claim; `claim` gives it one, as sandbox-manager's `/init` does.
 */
const envdAt = (host: string) => world.envd({ host, port });

/** A claim as sandbox-manager makes it: envd is initialised with `envdToken`, the Sandbox annotated with TOKEN. */
async function claim(sandbox: string, double: EnvdDouble, vars: Record<string, string>, envdToken = TOKEN) {
  double.setToken(envdToken);
  await world.claim(sandbox, vars, TOKEN);
}

function explain(sandbox: string, more: string[] = []): Promise<Run> {
  const args = [CLI, 'explain', '--kubeconfig', cluster.kubeconfigPath, '--sandbox', `${NS}/${sandbox}`];
  // deliver-env's decision depends on its flags: explain is given the ones it runs with.
  const all = [...args, '--runtime-port', String(port), '--lease-namespace', LEASE_NS, ...more];
  return new Promise((resolve) => {
    execFile(process.execPath, all, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

async function delivery(sandbox: string): Promise<NonNullable<Explanation['delivery']>> {
  const run = await explain(sandbox, ['-o', 'json']);
  if (run.code !== 0) throw new Error(`explain --sandbox ${sandbox} failed: ${run.stderr}`);
  const { delivery: found } = JSON.parse(run.stdout) as Explanation;
  if (found === undefined) throw new Error(`explain --sandbox ${sandbox} said nothing of deliver-env`);
  return found;
}

const LEADER = { state: 'held', lease: `${LEASE_NS}/sandbox-injector-deliver-env`, holder: 'replica-a' };

beforeAll(async () => {
  ({ cluster, kubeconfigPath: kubeconfig } = await deliverCluster(NS, LEASE_NS));
  const { double: base } = await world.envd({ token: TOKEN });
  port = base.port;
  controller = await startDeliverProcess(cluster, 'replica-a', controllerArgs(port, LEASE_NS), kubeconfig);
  await controller.logged((l) => l.msg === 'holding the Lease: delivering', 'replica-a leads');
}, 180_000);

afterAll(async () => {
  await controller?.stop();
  await world.close();
  await cluster?.stop();
});

describe('explain --sandbox: deliver-env', () => {
  it('unclaimed: a pool sandbox, its pod the one an earlier claim would be cleared from', async () => {
    await envdAt('127.0.6.1');
    const { podUid } = await world.createSandbox({ name: 'sbx-pool', podIP: '127.0.6.1' });
    const found = await delivery('sbx-pool');
    expect(found).toMatchObject({
      leader: LEADER,
      claimed: false,
      pod: { name: 'sbx-pool-pod', uid: podUid },
      decision: { kind: 'unclaimed' },
      env: 'none',
      next: ['nothing: the pod waits for its next claim'],
    });
  });

  it('claimed and delivered: the EnvDelivered Event for the pod the Sandbox names', async () => {
    const { double } = await envdAt('127.0.6.2');
    const { podUid } = await world.createSandbox({ name: 'sbx-claimed', podIP: '127.0.6.2' });
    await claim('sbx-claimed', double, { API_KEY: 'sk-explain' });
    await until('delivered', () => firstDeliveryIn(double));
    await world.event('sbx-claimed', 'EnvDelivered');
    const found = await delivery('sbx-claimed');
    expect(found).toMatchObject({
      claimed: true,
      claim: { by: ['annotation agents.kruise.io/init-runtime-request'] },
      pod: { name: 'sbx-claimed-pod', uid: podUid },
      decision: {
        kind: 'deliver',
        detail: `env.sh with 1 variable, then .env_ready, through http://127.0.6.2:${port}`,
      },
      lastEvent: {
        reason: 'EnvDelivered',
        type: 'Normal',
        message: `wrote env.sh (1 variable) and .env_ready in pod ${podUid}`,
      },
      env: 'delivered',
    });
    expect(found.lastEvent?.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const text = await explain('sbx-claimed');
    expect(text.stdout).toContain(
      `\nDelivery (deliver-env)\n  deliver-env: Lease ${LEASE_NS}/sandbox-injector-deliver-env held by replica-a\n`,
    );
    expect(text.stdout).toContain(
      '  env:         delivered: the newest Event says env.sh and .env_ready are in this pod\n',
    );
  });

  it('claimed and waiting, no pod: nothing to deliver to yet', async () => {
    await cluster.applyObject({
      apiVersion: 'agents.kruise.io/v1alpha1',
      kind: 'Sandbox',
      metadata: { name: 'sbx-podless', namespace: NS },
      spec: {
        runtimes: [{ name: 'agent-runtime' }],
        template: { spec: { containers: [{ name: 'main', image: 'app:1' }] } },
      },
    });
    await world.claim('sbx-podless', { API_KEY: 'sk-explain-podless' }, TOKEN);
    const found = await delivery('sbx-podless');
    expect(found).toMatchObject({
      claimed: true,
      pod: { why: 'no pod claims the Sandbox, and its status.podInfo.podUID names none' },
      decision: { kind: 'wait', case: 'no-pod' },
      env: 'not-delivered',
    });
    expect(found.next[0]).toMatch(/^wait for upstream's controller to make the pod/);
  });

  it('claimed and waiting, ambiguous: a second live pod claims the Sandbox, and deliver-env holds', async () => {
    const own = await envdAt('127.0.6.4');
    const second = await envdAt('127.0.6.5');
    const { uid } = await world.createSandbox({ name: 'sbx-twin', podIP: '127.0.6.4' });
    const secondUid = await world.createPod('sbx-twin', uid, { suffix: '-2', podIP: '127.0.6.5', podInfo: false });
    await claim('sbx-twin', own.double, { API_KEY: 'sk-explain-twin' });
    await until('EnvDeliveryHeld (ambiguous)', async () =>
      (await world.events('sbx-twin')).find(
        (e) => e.reason === 'EnvDeliveryHeld' && e.message?.startsWith('ambiguous: '),
      ),
    );
    const found = await delivery('sbx-twin');
    expect(found).toMatchObject({
      claimed: true,
      decision: { kind: 'held', case: 'ambiguous' },
      lastEvent: { reason: 'EnvDeliveryHeld', type: 'Warning' },
      env: 'not-delivered',
    });
    expect(found.pod.name).toBeUndefined();
    expect(found.pod.why).toContain(secondUid);
    expect(found.next[0]).toMatch(/^another live pod claims the Sandbox/);
    expect(own.double.requests.filter((r) => r.operation !== 'list')).toEqual([]);
    expect(second.double.requests).toEqual([]);
  });

  it("claimed and waiting, envd refusing: envd answers 401 to the claim's token", async () => {
    const { double } = await envdAt('127.0.6.6');
    await world.createSandbox({ name: 'sbx-refused', podIP: '127.0.6.6' });
    await claim('sbx-refused', double, { API_KEY: 'sk-explain-refused' }, 'tok-someone-else');
    await world.event('sbx-refused', 'EnvDeliveryFailed');
    const found = await delivery('sbx-refused');
    expect(found).toMatchObject({
      claimed: true,
      decision: { kind: 'deliver' },
      lastEvent: { reason: 'EnvDeliveryFailed', type: 'Warning' },
      env: 'not-delivered',
    });
    expect(found.lastEvent?.message).toMatch(/^unauthorized: .*HTTP 401/);
    expect(found.next[0]).toMatch(/^envd refuses the token/);
  });

  it("cleared after recycle: the claim ended, and the last claim's files were removed from the pod", async () => {
    // sbx-claimed's claim was delivered above; upstream's recycle puts it back into its pool.
    await kubectl(['label', '--overwrite', 'sandbox', 'sbx-claimed', 'agents.kruise.io/sandbox-claimed=false']);
    await kubectl([
      'annotate',
      'sandbox',
      'sbx-claimed',
      'agents.kruise.io/init-runtime-request-',
      'agents.kruise.io/claim-timestamp-',
    ]);
    await world.event('sbx-claimed', 'EnvCleared');
    const found = await delivery('sbx-claimed');
    expect(found).toMatchObject({
      claimed: false,
      pod: { name: 'sbx-claimed-pod' },
      decision: { kind: 'unclaimed' },
      lastEvent: { reason: 'EnvCleared', type: 'Normal' },
      env: 'cleared',
      next: ['nothing: the pod waits for its next claim'],
    });
  });
});

describe('explain --sandbox: what it is told', () => {
  it("refuses deliver-env's flags without --sandbox, and a bad value of one", async () => {
    const withPod = await new Promise<Run>((resolve) => {
      const args = [
        CLI,
        'explain',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--pod',
        `${NS}/sbx-pool-pod`,
        '--trust-runtime-url',
      ];
      execFile(process.execPath, args, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
      });
    });
    expect(withPod.code).toBe(2);
    expect(withPod.stderr).toContain("--trust-runtime-url: deliver-env's flags are for --sandbox");
    const badMode = await explain('sbx-pool', ['--recycled-pods', 'never']);
    expect(badMode.code).toBe(2);
    expect(badMode.stderr).toContain('--recycled-pods: "never" is not one of restart, recreate, any');
  });
});
